"""Review the sound library by ear in Label Studio: is each clip the sound its tags say?

    python -m annotation.library push --workspace W [--sounds LIBRARY] [--used-only] [--overlap 3] [--draws 3]
    python -m annotation.library pull --workspace W [--sounds LIBRARY]
    (every flag: --help; LIBRARY defaults to the workspace build's mix.sounds)

push makes (or tops up) one project, '<title> — library review', where each reviewer hears each clip of
the library, and a few rendered draws of each procedural class, with no tag, title or file name shown,
and picks the sound from the taxonomy's tag list (by description) or "none of these"; --overlap
reviewers per clip. The audio goes to the workspace's audio store, as the arms' audio does; a task holds
the audio URL and an opaque key. pull exports the answers (reviewers as pseudonyms; scripted demo
accounts counted as demo) and writes the workspace's review, W/library_review.jsonl
(annotation.library_review); it writes nothing into the library, which other workspaces share, unless
told --into-library (people's answers only: refused when scripted demo reviewers answered). release.export
refuses a release whose mixtures use clips the review (the workspace's, and the library's own) did not
confirm, unless told --allow-unreviewed-sounds. The automatic build does not wait for this.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from annotation.labelstudio import (
    DELETED_HINT,
    SERVER_ENV,
    add_server_args,
    check_config,
    connect_from_args,
    ensure_local_storage,
    export_tasks,
    get_project,
    resolve_project,
    user_emails,
)
from annotation.library_review import (
    DEFAULT_DRAWS,
    MAX_REVIEW_S,
    ROLE,
    ReviewItem,
    item_id,
    read_items,
    keep_earlier,
    WORKSPACE_REVIEW_FILE,
    read_review,
    read_workspace_review,
    review_line,
    review_spec,
    write_items,
    write_review,
    write_workspace_review,
)
from annotation.ownership import MARKED, check_owner
from annotation.protocol import Item, read_task_map, shuffle_seed, workspace_taxonomy
from annotation.push import check_pushable, push_items, record_keys
from annotation.state import (
    DEMO_EMAIL_DOMAIN,
    default_project_title,
    demo_annotators,
    local_file_url,
    one_per_annotator,
    open_workspace,
    parse_annotation,
    plays_audio,
    pseudonym,
    pseudonym_salt,
    read_state,
    utc_now,
    write_state,
)
from construction.core.cli import Parser, add_sounds, add_workspace, run_main
from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.record import AudioRef, stable_seed
from construction.core.workspace import Workspace

STATE_KEY = "library_review"  # annotation.json: the review project's id, title, url


def library_dir(ws: Workspace, sounds: str | None) -> Path:
    """--sounds, else the library the workspace was built with (its config.yaml's mix.sounds)."""
    if sounds:
        return Path(sounds).expanduser().resolve()
    snapshot = ws.root / "config.yaml"
    if not snapshot.is_file():
        raise WorkbenchError(f"{ws.root} has no config.yaml naming its sound library; pass --sounds LIBRARY")
    return Path(load_config(base=snapshot).mix.sounds).expanduser().resolve()


def load_clips(library: Path) -> list[Any]:
    from construction.sounds.library import load_library

    lib = load_library(library)
    if not lib.clips:
        raise WorkbenchError(f"the sound library {library} holds no usable clip"
                             + (f" ({len(lib.problems)} skipped: {lib.problems[0].reason})" if lib.problems else ""))
    return lib.clips


def used_clip_ids(ws: Workspace) -> set[str]:
    """The clips the workspace's kept mixtures and controls play (the wer and controls manifests). The
    twins play no clip of their own: their backgrounds are made from the scene and procedural danger
    classes (construction.mixing.twin)."""
    used: set[str] = set()
    for stage in ("wer", "controls"):
        if ws.has_manifest(stage):
            for sample in ws.read_samples(stage):
                used.update(sound.clip_id for sound in (sample.mix.sounds if sample.mix else []))
    return used


SPECTROGRAM_PX, SPECTROGRAM_DPI, SPECTROGRAM_MAX_HZ = (900, 320), 100, 10000


def spectrogram_png(audio: np.ndarray, sample_rate: int) -> bytes:
    """The clip's spectrogram as a small PNG: time (s) across, frequency (Hz) up, in dB. No title and
    no file name: the picture shows what the audio holds and names nothing (the review is blind)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    x = np.asarray(audio, dtype=np.float64)
    fig = plt.figure(figsize=(SPECTROGRAM_PX[0] / SPECTROGRAM_DPI, SPECTROGRAM_PX[1] / SPECTROGRAM_DPI),
                     dpi=SPECTROGRAM_DPI)
    # fixed margins that fit the tick labels, and one draw into pixels: tight_layout and savefig drew
    # every figure three times (0.26 s a clip, 2.3x this)
    ax = fig.add_axes((0.075, 0.16, 0.915, 0.81))
    nfft = 512 if sample_rate <= 24000 else 1024
    with np.errstate(divide="ignore"):  # digital silence is exact zeros
        ax.specgram(x + 1e-9, NFFT=nfft, Fs=sample_rate, noverlap=nfft * 3 // 4, cmap="magma", vmin=-120)
    ax.set_ylim(0, min(SPECTROGRAM_MAX_HZ, sample_rate / 2))
    ax.set_xlabel("time (s)", fontsize=8)
    ax.set_ylabel("Hz", fontsize=8)
    ax.tick_params(labelsize=7)
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3]
    plt.close(fig)
    small = io.BytesIO()  # a 64-colour palette: a noise spectrogram in full colour is large
    Image.fromarray(pixels).quantize(64).save(small, format="PNG", optimize=True)
    return small.getvalue()


def store_image(ws: Workspace, data: bytes) -> Path:
    """A PNG in the workspace's audio store, named by its content hash like the audio beside it (so
    the server's local-files storage serves it, and a name says nothing)."""
    import hashlib

    from construction.core.workspace import atomic_write_bytes

    digest = hashlib.sha256(data).hexdigest()
    path = ws.root / "audio" / digest[:2] / f"{digest}.png"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
    return path


def render(ws: Workspace, library: Path, clip: Any, draws: int) -> list[tuple[ReviewItem, AudioRef, Path]]:
    """The audio a clip's tasks play, stored in the workspace: the recording (its first MAX_REVIEW_S), or
    `draws` seeded draws of a procedural class (construction.sounds.procedural, imported only then);
    each with its spectrogram (a PNG in the store)."""
    procedural = str(getattr(clip, "procedural", "") or "")
    if not procedural:
        from construction.sounds.library import read_mono

        audio = np.asarray(read_mono(library / clip.path)[: int(MAX_REVIEW_S * clip.sample_rate)], dtype=np.float32)
        ref = ws.store_audio(audio, clip.sample_rate)
        image = store_image(ws, spectrogram_png(audio, clip.sample_rate))
        return [(ReviewItem(item_id(clip.clip_id, clip.sha256), clip.clip_id, clip.sha256, tuple(clip.tags)), ref,
                 image)]
    from construction.sounds.procedural import draw as draw_procedural

    out = []
    for k in range(draws):
        seed = stable_seed("library-review", clip.clip_id, k)
        audio, _params = draw_procedural(procedural, seed, min(float(clip.duration_s), MAX_REVIEW_S),
                                         int(clip.sample_rate))
        ref = ws.store_audio(np.asarray(audio, dtype=np.float32), int(clip.sample_rate))
        image = store_image(ws, spectrogram_png(audio, int(clip.sample_rate)))
        out.append((ReviewItem(item_id(clip.clip_id, clip.sha256, k), clip.clip_id, clip.sha256, tuple(clip.tags),
                               procedural, k, seed), ref, image))
    return out


def push(args: argparse.Namespace) -> int:
    if args.overlap < 1:
        raise WorkbenchError(f"--overlap must be at least 1, not {args.overlap}")
    if args.draws < 1:
        raise WorkbenchError(f"--draws must be at least 1, not {args.draws}")
    ws = open_workspace(args.workspace)
    library = library_dir(ws, args.sounds)
    spec = review_spec(workspace_taxonomy(ws).tags)
    clips = load_clips(library)
    if args.used_only:  # what this build plays first; the rest of the library can be reviewed later
        used = used_clip_ids(ws)
        if not used:
            raise WorkbenchError(f"--used-only: {ws.root} has no mixed samples (wer or controls manifest) yet")
        clips = [c for c in clips if c.clip_id in used]
    state = read_state(ws)
    recorded = state.get(STATE_KEY) or {}
    title = args.project or recorded.get("title") or f"{default_project_title(ws, state)} — library review"
    server = connect_from_args(args)
    bound = recorded.get("id") if not args.project or args.project == recorded.get("title") else None
    if bound is not None:  # another workspace's project, or one asking something else: refused before any change
        project = get_project(server, int(bound), title, DELETED_HINT)
        check_owner(server, project, state, recorded)
        check_config(server, project, spec)
    from tqdm import tqdm

    rendered = [pair for clip in tqdm(clips, desc="storing the clips' review audio", unit="clip", file=sys.stderr,
                                      disable=args.quiet)
                for pair in render(ws, library, clip, args.draws)]
    items = [Item(r.item_id, ROLE, "clip", ref) for r, ref, _ in rendered]
    check_pushable(ws, items, server)
    with ws.lock():
        known = read_items(ws)
        known.update({r.item_id: {**r.to_json(), "audio": ref.model_dump()} for r, ref, _ in rendered})
        write_items(ws, known)
    keyed = record_keys(ws, state, items)
    images = {r.item_id: image for r, _, image in rendered}  # each task shows its clip's spectrogram
    result = push_items(ws, server, spec, title, keyed, args.overlap, seed=shuffle_seed(state["task_key_secret"], ROLE),
                        project_id=None if bound is None else int(bound), state=state,
                        entry=recorded if bound is not None else None,
                        extra_data={iid: {"image": local_file_url(path, server.document_root)}
                                    for iid, path in images.items()})
    ensure_local_storage(server, result.project_id, ws.root / "audio", list(images.values()))
    with ws.lock():
        current = read_state(ws)
        current[STATE_KEY] = {"id": result.project_id, "title": title, "url": server.url, "pushed_at": utc_now(),
                              MARKED: True}
        write_state(ws, current)
    procedural = sum(1 for c in clips if getattr(c, "procedural", ""))
    print(f"library review: project {title!r} (id {result.project_id})" + (" created" if result.created else "")
          + f": {len(clips)} clip(s) of {library} ({procedural} procedural class(es), {args.draws} draw(s) each), "
          f"imported {result.imported} new task(s), {result.already} already there, {result.task_count} in total")
    print(f"after reviewing: {server.command('annotation.library', 'pull')}")
    return 0


def collect(server: Any, project_id: int, spec: Any, ws: Workspace, items: dict[str, dict[str, Any]],
            salt: str, demo: frozenset[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """item id -> {pseudonym: answer} (each person's latest answer, skips left out), and what was not
    counted (a task that plays other audio than push sent, an annotation Label Studio records no maker of)."""
    task_map = read_task_map(ws)
    emails = user_emails(server)
    answers: dict[str, dict[str, str]] = defaultdict(dict)
    problems: list[str] = []
    for task in export_tasks(server, project_id):
        data = task.get("data") or {}
        iid, role = task_map.get(str(data.get("key") or ""), ("", ""))
        if role != ROLE or iid not in items:
            problems.append(f"task {task.get('id')}: not a task of this workspace's library review; ignored")
            continue
        if not plays_audio(data.get("audio"), AudioRef.model_validate(items[iid]["audio"])):
            problems.append(f"task {task.get('id')}: plays other audio than push sent for {iid}; not counted")
            continue
        parsed = [parse_annotation(raw, f"task {task.get('id')}", emails, salt, spec, demo)
                  for raw in task.get("annotations") or []]
        for p in parsed:
            problems.extend(p.problems)
        for p in one_per_annotator([p for p in parsed if not p.not_counted]):
            if not p.annotation.cancelled and p.annotation.label in spec.labels:
                answers[iid][p.annotation.annotator] = p.annotation.label
    return answers, problems


def pull(args: argparse.Namespace) -> int:
    ws = open_workspace(args.workspace)
    library = library_dir(ws, args.sounds)
    spec = review_spec(workspace_taxonomy(ws).tags)
    clips = load_clips(library)
    state = read_state(ws)
    salt = pseudonym_salt(state)
    server = connect_from_args(args)
    project = resolve_project(server, state.get(STATE_KEY), args.project, "library review project", state)
    items = read_items(ws)
    # scripted: the accounts the workspace recorded, and any at the demo domain (the server's own list)
    demo = demo_annotators(state) | {pseudonym(email, salt) for email in user_emails(server).values()
                                     if email.strip().lower().endswith("@" + DEMO_EMAIL_DOMAIN)}
    answers, problems = collect(server, project.id, spec, ws, items, salt, demo)
    pulled = [review_line(clip, answers, items, demo) for clip in clips]  # from the server, never from a file
    lines = keep_earlier(pulled, read_workspace_review(ws.root) or {})
    by_demo = sum(line["demo"] for line in pulled)
    if args.into_library and by_demo:  # refused before anything is written
        raise WorkbenchError(f"refusing --into-library: {by_demo} answer(s) came from scripted demo reviewers, and "
                             f"the shared library {library} takes people's reviews only; pull without --into-library "
                             f"(the review stays in {ws.root / WORKSPACE_REVIEW_FILE})")
    path = write_workspace_review(ws, lines)
    reviewed = sum(1 for line in lines if line["reviewers"])
    confirmed = sum(1 for line in lines if line["confirmed"])
    print(f"library review: {len(lines)} clip(s), {reviewed} reviewed, {confirmed} confirmed "
          f"(>= 2/3 of at least 2 reviewers named a tag of the clip); {path}")
    if args.into_library:
        shared = keep_earlier(pulled, read_review(library, demo=demo) or {})  # only what this pull read
        written = write_review(library, shared)
        print(f"into the library: wrote {len(shared)} review line(s), {sum(1 for x in shared if x['reviewers'])} "
              f"with answers, to {written} (every workspace built on {library} now reads them)")
    else:
        print(f"the library {library} is not changed (its own review file is written only with --into-library)")
    if by_demo:
        print(f"DEMO: {by_demo} answer(s) came from scripted demo reviewers; a release says so")
    unconfirmed = [line["clip_id"] for line in lines if line["reviewers"] and not line["confirmed"]]
    if unconfirmed:
        print(f"not confirmed ({len(unconfirmed)}): {', '.join(unconfirmed[:20])}"
              + (" ..." if len(unconfirmed) > 20 else "") + "; retag or drop them before a release")
    if problems:
        print(f"problems ({len(problems)}):\n" + "\n".join(f"  {p}" for p in problems[:20]))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.library", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (("push", "make or top up the review project"),
                       ("pull", f"write the workspace's review, W/{WORKSPACE_REVIEW_FILE}")):
        sub = commands.add_parser(name, help=what, env=SERVER_ENV)
        add_workspace(sub)
        add_sounds(sub, "the sound library (default: the workspace build's mix.sounds)")
        sub.add_argument("--project", help="the review project's exact title (default: the recorded one, else "
                                           "'AOR-Bench <6 hex of the workspace id> — library review')")
        if name == "push":
            sub.add_argument("--overlap", type=int, default=3, help="reviewers per clip")
            sub.add_argument("--used-only", action="store_true",
                             help="only the clips this workspace's kept mixtures and controls play")
            sub.add_argument("--draws", type=int, default=DEFAULT_DRAWS,
                             help=f"rendered draws of each procedural class (default {DEFAULT_DRAWS})")
            sub.add_argument("--quiet", action="store_true", help="no progress bar")
        else:
            sub.add_argument("--into-library", action="store_true",
                             help="also write the review into the library's own LIBRARY/review.jsonl, which every "
                                  "workspace built on it reads (people's answers only: refused when scripted demo "
                                  "reviewers answered)")
        add_server_args(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return push(args) if args.command == "push" else pull(args)


if __name__ == "__main__":
    run_main(main, sys.argv[1:])
