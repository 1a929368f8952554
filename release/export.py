"""Export the validated samples as a Hugging Face dataset folder, and optionally push it to the Hub.

The one command that makes a release (`python -m release.export --help`): nothing reaches the Hub but
what it checked and wrote. Every sample is checked before anything is written (release.checks), and the
folder is written whole beside its target, then swapped in (release.folder): a refused or killed export
leaves the previous release as it was. What goes into the folder (this module):
    README.md                          dataset card (YAML front matter with both configs + prose), see
                                       release.card
    ATTRIBUTION.md                     every background clip and voice with its source and licence, see
                                       release.attribution
    release.json                       version, code version, licence, counts, agreement, shards
    build_config.yaml                  the workspace's resolved config (no secrets, no local paths)
    checksums.sha256                   sha256 of every other file (`sha256sum -c checksums.sha256`)
    data/<split>-0000K-of-0000N.parquet  config "default": one row per validated sample, sorted by id, the
                                       mixture (`audio`) and the clean speech (`speech_audio`) embedded as
                                       WAV bytes, the per-arm human results as columns, HF features
                                       (Audio / ClassLabel / Value) in the schema metadata
    controls/<split>-0000K-of-0000N.parquet  config "controls" (only when the workspace has controls of
                                       released samples, manifests/annotated_controls.jsonl): one row per
                                       control, in the split of the sample it controls; expected harmful
    plots/*.png                        category mix, SNR and WER histograms, alpha per category (release.plots)

The inputs are release.inputs; the rows, their schema and the parquet shards release.rows; the Hub push
release.hub; the checks that trace every row back through the workspace's chain release.integrity; the
splits release.splits. A release whose labels came from scripted demo annotators says so on its card and
is never pushed to a real Hub: `--dry-run` shows its push, and a push to a Hub-compatible endpoint on this
machine (HF_ENDPOINT=http://127.0.0.1:PORT, e.g. `python -m tests.hub_stub`) rehearses one.

The release goes to <workspace>/release unless --out names another folder; a folder inside the workbench's
source tree (its root or a tracked top-level folder such as release/) is refused.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from annotation.server import server_flags
from construction.core.cli import Parser, add_out, add_quiet, add_workspace, run_main
from construction.core.errors import WorkbenchError
from construction.core.record import AudioRef
from construction.core.runner import reason_code
from construction.core.workspace import reporting_write_errors
from release.checks import check_samples
from release.folder import (
    check_target,
    exclusive,
    recover,
    refusal,
    replace_folder,
    write_checksums,
)
from release.hub import (
    GATED,
    demo_refusal,
    describe_push,
    hub_endpoint,
    hub_token,
    is_loopback,
    push_release,
    shown_endpoint,
)
from release.inputs import (  # noqa: F401 (ReleaseInputs, ReleaseSummary and read_inputs were here before)
    CONTROLS_CONFIG,
    MANIFEST,
    CONTROLS_DIR,
    DEFAULT_SHARD_BYTES,
    FORMAT,
    VERSION_RE,
    ReleaseInputs,
    ReleaseSummary,
    read_inputs,
)
from release.integrity import number_problems
from release.markdown import demo_share
from release.rows import (
    control_features_for,
    control_row_for,
    features_for,
    pseudonyms,
    row_for,
    shipped_arms,
    taxonomy_categories,
    write_config,
)
from release.scrub import assert_no_leaks, forbidden_strings, public
from release.sound_review import FLAG, check_sound_review, review_summary
from release.splits import assign_splits, parse_splits, split_sizes

# the checkout's top-level folders that hold its tracked files: a release is never written among them
SOURCE_FOLDERS = ("construction", "annotation", "validation", "release", "evaluation", "tests", "docs", "scripts",
                  "configs", "perf", ".ci", ".git")


def source_tree_problem(out: str | Path) -> str | None:
    """What in the workbench's source tree `out` falls in ("the release package", "the checkout's root",
    ...), or None. The checkout is the one this package was loaded from; anything else under its root
    (workspace/, another untracked folder) is fine."""
    root = Path(__file__).resolve().parents[1]
    if not ((root / ".git").exists() or (root / "pyproject.toml").is_file()):
        return None  # an installed copy: its site-packages is no source tree of ours
    target = Path(out).expanduser().resolve()
    if target == root:
        return "the checkout's root"
    for folder in SOURCE_FOLDERS:
        if target.is_relative_to(root / folder):
            return "the release package" if folder == "release" else f"its {folder}/ folder"
    return None


def export_release(inputs: ReleaseInputs, out: str | Path, version: str = "0.1.0", splits: str = "test",
                   max_shard_bytes: int = DEFAULT_SHARD_BYTES, progress: bool = False) -> ReleaseSummary:
    """Check every sample, then write the release folder atomically (refusing with a full list)."""
    if not VERSION_RE.match(version):
        raise WorkbenchError(f"version '{version}' is not X.Y.Z")
    fractions = parse_splits(splits)
    split_sizes(len(inputs.samples), fractions)  # refuses, before anything is written, a split left empty
    out = Path(out).expanduser().resolve()
    with reporting_write_errors(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(out):
        recover(out)
        check_target(out)
        if check_samples(inputs, verify_checksums=False):  # the audio files are verified while writing
            raise refusal(check_samples(inputs))  # ... or now, so that the refusal lists every bad file
        with reporting_write_errors(out.parent):
            tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.building-"))
        try:
            with reporting_write_errors(tmp):
                tmp.chmod(0o755)  # mkdtemp makes it private; a release folder is meant to be shared
                split_counts = _write_release(inputs, tmp, version, fractions, max_shard_bytes, progress)
                files = {p.relative_to(tmp).as_posix(): p.stat().st_size
                         for p in sorted(tmp.rglob("*")) if p.is_file()}
                replace_folder(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return ReleaseSummary(out, version, inputs.demo, split_counts, files, len(inputs.controls))


def _write_release(inputs: ReleaseInputs, root: Path, version: str, fractions: dict[str, float],
                   max_shard_bytes: int, progress: bool = False) -> dict[str, int]:
    from release.attribution import attribution
    from release.card import dataset_card
    from release.plots import write_plots

    ws, samples, controls = inputs.workspace, inputs.samples, inputs.controls
    categories = taxonomy_categories(inputs.config, {s.category for s in [*samples, *controls]})
    features = features_for(categories, _one_rate(s.mixture for s in samples), _one_rate(s.speech for s in samples))
    arms = shipped_arms(inputs.protocol)
    names = pseudonyms([*samples, *controls], arms)
    forbidden = forbidden_strings(ws.root)
    by_split = assign_splits(samples, fractions, int(inputs.config.get("seed") or 0))
    split_of = {s.sample_id: split for split, members in by_split.items() for s in members}

    mismatched: list[str] = []
    rows_meta: list[dict[str, Any]] = []  # every row without the audio, for the card and plots
    shard_files = write_config(
        root, "data", by_split, ws, max_shard_bytes, features, forbidden, mismatched, rows_meta,
        lambda s, audio, speech, scene, twin, danger: row_for(s, audio, categories, names, speech, arms, scene,
                                                              twin, danger),
        extra=("speech", "scene", "irrelevant", "danger"), progress=progress)
    control_meta: list[dict[str, Any]] = []
    control_features = None
    control_files: dict[str, list[str]] = {}
    if controls:
        control_features = control_features_for(categories, _one_rate(c.mixture for c in controls),
                                                 _one_rate(c.speech for c in controls))
        control_splits = {split: [c for c in controls if split_of[str(c.custom["control_of"])] == split]
                          for split in by_split}
        control_files = write_config(
            root, CONTROLS_DIR, control_splits, ws, max_shard_bytes, control_features, forbidden, mismatched,
            control_meta, lambda c, audio, speech: control_row_for(c, audio, speech, categories, names),
            progress=progress)
    mismatched += number_problems([*rows_meta, *control_meta])
    if mismatched:
        raise refusal(mismatched)

    split_counts = {split: len(members) for split, members in by_split.items() if members}
    control_counts = Counter(m["split"] for m in control_meta)
    info = {
        "format": FORMAT,
        "version": version,
        "code_version": code_version(),
        "release_licence": inputs.release_licence,
        "demo": inputs.demo,
        "label_sources": inputs.label_sources,
        "num_samples": len(samples),
        "splits": split_counts,
        "shards": shard_files,
        "categories": dict(sorted(Counter(s.category for s in samples).items())),
        "num_annotators": len(names),
        "protocol": inputs.protocol,
        "configs": {"default": {"num_rows": len(samples), "splits": split_counts, "shards": shard_files}},
        "agreement": public(agreement_for_release(inputs.agreement)),
        "sound_review": (inputs.sound_review or review_summary(inputs, False)[0]).to_json(),
    }
    if controls:
        info["configs"][CONTROLS_CONFIG] = {
            "num_rows": len(controls), "splits": {k: control_counts[k] for k in by_split if control_counts[k]},
            "shards": control_files,
            "kinds": dict(sorted(Counter(m["control_kind"] for m in control_meta).items()))}
    texts = {
        "release.json": json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "build_config.yaml": yaml.safe_dump(public(inputs.config), sort_keys=True, allow_unicode=True),
        "ATTRIBUTION.md": attribution([*samples, *controls], inputs.release_licence),
    }
    plots = write_plots(root / "plots", rows_meta, inputs.agreement, categories)
    texts["README.md"] = dataset_card(inputs, info, rows_meta, features, shard_files, root, plots,
                                      control_meta, control_features, control_files)
    assert_no_leaks(texts.items(), forbidden)
    for rel, text in texts.items():
        (root / rel).write_text(text, encoding="utf-8")
    write_checksums(root)
    return split_counts


# validation's reasons for a sample that waits (more labels, or an adjudicator), not one rejected for good
WAITING = {"needs_labels": "label them: python -m annotation.push{flags}, then pull and agreement once labelled",
           "needs_adjudication": "decide them: python -m validation.adjudicate push{flags}, then its pull and agreement"}


def left_out(inputs: ReleaseInputs, flags: str = "") -> list[str]:
    """What validation left out of the release, by reason (each sample under the first code of its reason),
    the waiting ones first, with the command that makes them releasable (`flags`: the workspace's, for it);
    nothing when every labelled sample is released."""
    ws = inputs.workspace
    rejected = list(ws.read_rejected(MANIFEST)) if ws.rejected_path(MANIFEST).is_file() else []
    if not rejected:
        return []
    codes = Counter(reason_code(r.reason) for r in rejected)
    return [f"left out {len(rejected)} of {len(rejected) + len(inputs.samples)} labelled sample(s), by reason "
            f"({ws.rejected_path(MANIFEST)}):",
            *(f"  {code} {n}" + (f": {WAITING[code].format(flags=flags)}" if code in WAITING else "")
              for code, n in sorted(codes.items(), key=lambda kv: (kv[0] not in WAITING, kv[0])))]


def agreement_for_release(agreement: dict[str, Any]) -> dict[str, Any]:
    """What the release states about agreement: the statistics and counts, never an annotator's id (the
    report's `annotators` and `not_listened` name them; only the total of the latter goes out)."""
    out = {k: agreement.get(k) for k in ("protocol", "overall", "per_category", "consensus", "level", "labels")}
    if agreement.get("arms"):
        out["arms"] = {arm: {k: v for k, v in entry.items() if k in ("overall", "per_category", "n_ratings")}
                       for arm, entry in agreement["arms"].items()}
    for key in ("controls", "rejected_by_arm", "scene_frames"):
        if key in agreement:
            out[key] = agreement[key]
    if "not_listened" in agreement:
        out["labels_not_listened"] = sum((agreement.get("not_listened") or {}).values())
    return out


def _one_rate(refs: Iterable[AudioRef | None]) -> int | None:
    rates = {ref.sample_rate for ref in refs if ref is not None}
    return rates.pop() if len(rates) == 1 else None


def code_version() -> str:
    """git describe of the checkout this package was loaded from, when it is one, else the installed
    package version. git is asked from this module's own folder (it finds the checkout from anywhere
    inside it), and only when the checkout tracks this file: an installed copy under some other
    repository (a virtual environment inside a project) is not described by that repository."""
    here = Path(__file__).resolve()
    try:
        tracked = subprocess.run(["git", "-C", str(here.parent), "ls-files", "--error-unmatch", "--", here.name],
                                 capture_output=True, text=True, timeout=30)
        if tracked.returncode == 0:
            proc = subprocess.run(["git", "-C", str(here.parent), "describe", "--always", "--dirty", "--tags"],
                                  capture_output=True, text=True, timeout=30)
            if proc.returncode == 0 and proc.stdout.strip():
                return "git:" + proc.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    from importlib.metadata import PackageNotFoundError, version
    for name in ("aor-bench-workbench", "aor-bench"):
        try:
            return f"{name}=={version(name)}"
        except PackageNotFoundError:
            continue
    return "unknown"


# --- command line ------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m release.export", description=__doc__.split("\n\n")[0],
                    env=("HF_TOKEN", "HF_ENDPOINT"))
    add_workspace(parser)
    add_out(parser, "release folder to write, replaced whole if it holds a release (default: <workspace>/release; "
                    "never inside the workbench's source tree)")
    parser.add_argument("--version", default="0.1.0", help="release version X.Y.Z; also the Hub tag")
    parser.add_argument("--splits", default="test", help="one split, or shares of several, e.g. 'dev=0.2,test=0.8'")
    parser.add_argument("--max-shard-mb", type=float, default=DEFAULT_SHARD_BYTES / 2**20,
                        help="largest Parquet shard, in MiB (the Hub's recommended size)")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME",
                        help="push the release as a Hub dataset to $HF_ENDPOINT (default: https://huggingface.co) "
                             "with the write token in $HF_TOKEN; a demo release only to an endpoint on this "
                             "machine (a rehearsal, e.g. python -m tests.hub_stub)")
    parser.add_argument("--private", action="store_true",
                        help="push privately: create the Hub dataset private; refuse if it exists and is public")
    parser.add_argument("--make-private", action="store_true",
                        help="with --push-to-hub: make an existing public Hub dataset private, then push")
    parser.add_argument("--gated", choices=GATED,
                        help="with --push-to-hub: gate the Hub dataset (users must accept its conditions; 'auto' "
                             "approves requests automatically, 'manual' leaves them to the repo's owners), set "
                             "before any file goes up (default: the repo's gating left as it is)")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --push-to-hub: export, then print what would go where (endpoint, repo, files "
                             "and sizes, visibility, the card's header) and send nothing; works for a demo release")
    parser.add_argument(FLAG, action="store_true",
                        help="release mixtures that use background clips the library review did not confirm "
                             "(python -m annotation.library); the card says so")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for flag in ("dry_run", "private", "make_private", "gated"):
        if getattr(args, flag) and not args.push_to_hub:
            parser.error(f"--{flag.replace('_', '-')} needs --push-to-hub")
    if args.push_to_hub and not re.match(r"^[\w.-]+/[\w.-]+$", args.push_to_hub):
        parser.error(f"--push-to-hub wants ORG/NAME, got '{args.push_to_hub}'")

    out = args.out or str(Path(args.workspace) / "release")
    if where := source_tree_problem(out):
        raise WorkbenchError(f"--out {out} is inside the workbench's source tree ({where}); write the release "
                             f"under the workspace, e.g. --out {Path(args.workspace) / 'release'} (the default)")

    inputs = read_inputs(args.workspace)
    inputs.sound_review = check_sound_review(inputs, args.allow_unreviewed_sounds)
    if args.push_to_hub and not args.dry_run:  # both refusals come before the export and any request
        if inputs.demo and not is_loopback(hub_endpoint()):
            raise demo_refusal()
        hub_token()
    summary = export_release(inputs, out, args.version, args.splits, int(args.max_shard_mb * 2**20),
                             progress=not args.quiet)
    counts = ", ".join(f"{k}: {v}" for k, v in summary.split_counts.items())
    print(f"wrote {summary.out}: {sum(summary.split_counts.values())} samples ({counts}), "
          + (f"{summary.num_controls} control(s) in config '{CONTROLS_CONFIG}', " if summary.num_controls else "")
          + f"{len(summary.files)} files, {summary.total_bytes / 1e6:.1f} MB"
          + (f" [DEMO release: {demo_share(inputs.label_sources)}]" if summary.demo else ""))
    for line in left_out(inputs, server_flags(args.workspace)):
        print(line)
    if args.push_to_hub:
        if args.dry_run:
            print(describe_push(summary, args.push_to_hub, args.private, args.make_private, args.gated))
        else:
            if is_loopback(hub_endpoint()):
                print(f"rehearsal: {shown_endpoint()} is on this machine, not the Hub"
                      + (" (a demo release goes no further than a local endpoint)" if summary.demo else "")
                      + f"; load it back with HF_ENDPOINT={shown_endpoint()} and "
                        f"datasets.load_dataset('{args.push_to_hub}')", flush=True)
            oid, private = push_release(summary, args.push_to_hub, args.private, args.make_private, args.gated)
            gating = f", gated: {args.gated}" if args.gated else ""
            print(f"pushed to {shown_endpoint()}/datasets/{args.push_to_hub} ({'private' if private else 'public'}"
                  f"{gating}) at commit {oid}, tag {summary.version}")
    return 0


if __name__ == "__main__":
    run_main(main)
