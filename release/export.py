"""Export the validated samples as a Hugging Face dataset folder, and optionally push it to the Hub.

    python -m release.export --workspace W --out DIR [--version X.Y.Z] [--splits test|dev=0.2,test=0.8]
                             [--push-to-hub ORG/NAME] [--private [--make-private]] [--dry-run]

DIR (written whole into a temp folder next to it, then renamed into place):
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

The rows, their schema and the parquet shards are release.rows; the Hub push is release.hub; the checks
that trace every row back through the workspace's chain are release.integrity; the splits release.splits.
A release whose labels came from scripted demo annotators says so on its card and is never pushed.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from annotation.state import ADJUDICATION_SOURCE
from construction.core.errors import WorkbenchError
from construction.core.record import AudioRef, Sample
from construction.sounds.library import compatible, normalise_licence
from construction.core.workspace import Workspace, fsync_dir, reporting_write_errors
from release.hub import describe_push, hub_endpoint, hub_token, push_release
from release.integrity import agreement_problems, control_problems, number_problems, read_chain, sample_problems
from release.markdown import demo_share
from release.rows import (
    assert_no_leaks,
    control_features_for,
    control_row_for,
    features_for,
    forbidden_strings,
    labelled,
    pseudonyms,
    public,
    row_for,
    shipped_arms,
    taxonomy_categories,
    wav_problem,
    write_config,
)
from release.splits import assign_splits, parse_splits, split_sizes

# marks a folder as ours, so a rerun may replace it. 2: the clean speech, per-arm results, the controls
# config and the annotations' arm (the annotations struct changed: readers of 1 must be updated)
FORMAT = "aor-bench-release/2"
FORMATS = ("aor-bench-release/1", FORMAT)  # releases an export may replace
MANIFEST = "validated"
CONTROLS_MANIFEST = "annotated_controls"  # the controls with their mixture-arm labels (annotation.pull)
CONTROLS_SOURCE = "controls"  # construction.controls: what annotated_controls must trace back to
CONTROLS_CONFIG = "controls"  # the release's second config
CONTROLS_DIR = "controls"
RELEASABLE = "benign"  # the benchmark holds clips whose context makes the speech benign
DEMO_SOURCE = "demo"
DEFAULT_LICENCE = "CC-BY-4.0"
DEFAULT_SHARD_BYTES = 500 * 1024 * 1024  # the Hub's recommended parquet shard size
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
REPO_ROOT = Path(__file__).resolve().parents[1]


# --- inputs ------------------------------------------------------------------------------------

@dataclass
class ReleaseInputs:
    workspace: Workspace
    samples: list[Sample]
    agreement: dict[str, Any]
    config: dict[str, Any]  # the workspace's config snapshot, as written (scrubbed on output)
    controls: list[Sample] = field(default_factory=list)  # the controls of released samples, sorted by id

    @property
    def release_licence(self) -> str:
        return str(self.config.get("release_licence") or DEFAULT_LICENCE)

    @property
    def demo(self) -> bool:
        return any(a.source == DEMO_SOURCE for s in [*self.samples, *self.controls] for a in s.annotations)

    @property
    def label_sources(self) -> dict[str, int]:
        """The labels posted on the released samples and controls by who posted them: scripted demo
        annotators, people, and adjudicators' decisions (recorded with source "adjudication")."""
        counts = Counter("adjudication" if a.source == ADJUDICATION_SOURCE else "demo" if a.source == DEMO_SOURCE
                         else "human" for s in [*self.samples, *self.controls] for a in s.annotations
                         if a.label is not None and not a.cancelled)
        return {source: counts[source] for source in ("demo", "human", "adjudication")}

    @property
    def protocol(self) -> str:
        """'three-arm' (speech alone, scene alone, mixture, controls) or 'mixture' (the mixture alone: the
        agreement reports of workspaces validated before the three arms name no protocol)."""
        return str(self.agreement.get("protocol") or "mixture")


def read_inputs(workspace: str | Path) -> ReleaseInputs:
    """The validated manifest, the agreement report and the config snapshot of a workspace."""
    ws = Workspace(workspace, read_only=True)  # export only reads: an archived, read-only build exports
    if not ws.has_manifest(MANIFEST):
        raise WorkbenchError(f"{ws.manifest_path(MANIFEST)} does not exist: run the validation stage first")
    # every released sample went through the automatic filter and the human labels of this workspace
    ws.check_lineage(MANIFEST, require=("annotated", "wer"))
    samples = list(ws.read_samples(MANIFEST))
    if not samples:
        raise WorkbenchError(f"{ws.manifest_path(MANIFEST)} holds no samples: nothing to release")
    agreement_path = ws.root / "reports" / "agreement.json"
    try:
        agreement = json.loads(agreement_path.read_text())
    except FileNotFoundError:
        raise WorkbenchError(f"{agreement_path} does not exist: run the validation stage first") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{agreement_path} is not valid JSON: {exc.msg}") from None
    config_path = ws.root / "config.yaml"
    config: dict[str, Any] = {}
    if config_path.exists():
        try:
            config = yaml.safe_load(config_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise WorkbenchError(f"{config_path} is not valid YAML: {exc}") from None
    return ReleaseInputs(ws, samples, agreement, config, read_controls(ws, {s.sample_id for s in samples}))


def read_controls(ws: Workspace, released: set[str]) -> list[Sample]:
    """The annotated controls of released samples (none when the workspace has no controls manifest).
    Every control must come from construction.controls (manifests/controls.jsonl): a control added by
    hand never reaches a release."""
    if not ws.has_manifest(CONTROLS_MANIFEST):
        return []
    controls = list(ws.read_samples(CONTROLS_MANIFEST))
    if not ws.has_manifest(CONTROLS_SOURCE):
        raise WorkbenchError(f"{ws.manifest_path(CONTROLS_SOURCE)} does not exist: the controls of "
                             f"'{CONTROLS_MANIFEST}' cannot be traced back to construction.controls")
    built = {s.sample_id for s in ws.read_samples(CONTROLS_SOURCE)}
    missing = sorted({c.sample_id for c in controls} - built)
    if missing:
        raise WorkbenchError(f"{ws.manifest_path(CONTROLS_MANIFEST)}: {len(missing)} control(s) are not in the "
                             f"'{CONTROLS_SOURCE}' manifest ({', '.join(missing[:5])}); they were not built by "
                             "construction.controls (a hand-edited manifest?)")
    return sorted((c for c in controls if str(c.custom.get("control_of")) in released), key=lambda c: c.sample_id)


def check_samples(inputs: ReleaseInputs, verify_checksums: bool = True) -> list[str]:
    """Every reason a sample (or a control of one) cannot be released, one line each (empty: all good)."""
    problems: list[str] = []
    licence = inputs.release_licence
    compatible(DEFAULT_LICENCE, licence)  # raises a clear error for an unsupported release licence
    three_arm = inputs.protocol == "three-arm"
    chain = read_chain(inputs)
    problems += agreement_problems(inputs.agreement)
    seen: set[str] = set()
    for s in inputs.samples:
        sid = s.sample_id
        before = len(problems)
        if sid in seen:
            problems.append(f"{sid}: listed twice in the manifest")
        seen.add(sid)
        if not labelled(s) and s.decided_by != "adjudication":
            problems.append(f"{sid}: no labels")
        if s.consensus_label is None:
            problems.append(f"{sid}: no consensus label")
        elif s.consensus_label != RELEASABLE:
            problems.append(f"{sid}: consensus '{s.consensus_label}' is not releasable (only '{RELEASABLE}')")
        if three_arm and not (s.provenance.get("validation.agreement") or {}).get("arms"):
            problems.append(f"{sid}: no per-arm results, yet the agreement report says the three-arm protocol "
                            "validated it (run python -m validation.agreement again)")
        problems += _licence_problems(s, licence)
        problems += _audio_problems(inputs, s, verify_checksums)
        problems += sample_problems(chain, s, decision=len(problems) == before)
    for c in inputs.controls:
        before = len(problems)
        if c.custom.get("control") not in ("mismatched", "neutral"):
            problems.append(f"{c.sample_id}: control kind {c.custom.get('control')!r} is not mismatched or neutral")
        problems += _licence_problems(c, licence)
        problems += _audio_problems(inputs, c, verify_checksums)
        problems += control_problems(chain, c, decision=len(problems) == before)
    return problems


def _licence_problems(s: Sample, licence: str) -> list[str]:
    if s.mix is None:
        # a neutral control is the speech over silence: no scene, no recipe
        return [] if s.custom.get("control") == "neutral" else [f"{s.sample_id}: no mix recipe"]
    return [f"{s.sample_id}: background {sound.clip_id} is under {sound.licence}, incompatible with the "
            f"{licence} release" for sound in s.mix.sounds
            if not compatible(normalise_licence(sound.licence) or sound.licence, licence)]


def _audio_problems(inputs: ReleaseInputs, s: Sample, verify_checksums: bool) -> list[str]:
    """The mixture and the clean speech must be in the store, unchanged since they were made (with
    `verify_checksums`: and the WAVs their records describe)."""
    problems = []
    for what, ref in (("mixture", s.mixture), ("speech", s.speech)):
        if ref is None:
            problems.append(f"{s.sample_id}: no {what} audio")
            continue
        try:
            path = inputs.workspace.audio_path(ref)
        except WorkbenchError as exc:
            problems.append(f"{s.sample_id}: {exc}")
            continue
        if not path.is_file():
            problems.append(f"{s.sample_id}: {'' if what == 'mixture' else what + ' '}audio file missing: {ref.path}")
        elif verify_checksums:
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != ref.sha256:
                problems.append(f"{s.sample_id}: checksum mismatch for {ref.path} (file changed since it was made)")
            elif problem := wav_problem(data, ref):
                problems.append(f"{s.sample_id}: {problem}")
    return problems


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# --- export ------------------------------------------------------------------------------------

@dataclass
class ReleaseSummary:
    out: Path
    version: str
    demo: bool
    split_counts: dict[str, int]
    files: dict[str, int] = field(default_factory=dict)  # relative path -> size in bytes
    num_controls: int = 0  # rows of the "controls" config

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())


def export_release(inputs: ReleaseInputs, out: str | Path, version: str = "0.1.0", splits: str = "test",
                   max_shard_bytes: int = DEFAULT_SHARD_BYTES) -> ReleaseSummary:
    """Check every sample, then write the release folder atomically (refusing with a full list)."""
    if not VERSION_RE.match(version):
        raise WorkbenchError(f"version '{version}' is not X.Y.Z")
    fractions = parse_splits(splits)
    split_sizes(len(inputs.samples), fractions)  # refuses, before anything is written, a split left empty
    out = Path(out).expanduser().resolve()
    with reporting_write_errors(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(out.parent):
        _recover(out)
        _check_target(out)
        if check_samples(inputs, verify_checksums=False):  # the audio files are verified while writing
            raise _refusal(check_samples(inputs))  # ... or now, so that the refusal lists every bad file
        with reporting_write_errors(out.parent):
            tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.building-"))
        try:
            with reporting_write_errors(tmp):
                tmp.chmod(0o755)  # mkdtemp makes it private; a release folder is meant to be shared
                split_counts = _write_release(inputs, tmp, version, fractions, max_shard_bytes)
                files = {p.relative_to(tmp).as_posix(): p.stat().st_size
                         for p in sorted(tmp.rglob("*")) if p.is_file()}
                _replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return ReleaseSummary(out, version, inputs.demo, split_counts, files, len(inputs.controls))


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """One export at a time into a folder: the leftovers _recover removes are then never live."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkbenchError(f"another export is writing into {folder}; wait for it to finish") from None
        yield
    finally:
        os.close(fd)


def _recover(out: Path) -> None:
    """Clear what a killed export left beside `out`: an unfinished `.OUT.building-*` folder, and the
    previous release hidden in `.OUT.old-*`, which is put back if the kill came mid-swap."""
    pattern = glob.escape(f".{out.name}")
    for unfinished in out.parent.glob(pattern + ".building-*"):
        shutil.rmtree(unfinished, ignore_errors=True)
    for hidden in sorted(out.parent.glob(pattern + ".old-*")):
        if not out.exists() and is_release_dir(hidden / "release"):
            os.replace(hidden / "release", out)
        shutil.rmtree(hidden, ignore_errors=True)
    fsync_dir(out.parent)


def _refusal(problems: list[str]) -> WorkbenchError:
    shown = problems[:50]
    more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
    return WorkbenchError(f"refusing to release: {len(problems)} problem(s)\n  " + "\n  ".join(shown) + more)


def _check_target(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not is_release_dir(out):
        raise WorkbenchError(f"--out {out} is a non-empty folder that is not a release; refusing to overwrite it")


def is_release_dir(path: Path) -> bool:
    try:
        return json.loads((path / "release.json").read_text()).get("format") in FORMATS
    except (OSError, ValueError, AttributeError):
        return False


def _replace(tmp: Path, out: Path) -> None:
    """Swap the finished folder in; the old release is only removed once the new one is in place."""
    for folder in [*(p for p in tmp.rglob("*") if p.is_dir()), tmp]:  # on disk before it is visible
        for path in folder.iterdir():
            if path.is_file():
                with open(path, "rb") as f:
                    os.fsync(f.fileno())
        fsync_dir(folder)
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-"))
        os.replace(out, old / "release")
    try:
        os.replace(tmp, out)
    except OSError:
        if old is not None:
            os.replace(old / "release", out)  # put the previous release back
        raise
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_release(inputs: ReleaseInputs, root: Path, version: str, fractions: dict[str, float],
                   max_shard_bytes: int) -> dict[str, int]:
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
        lambda s, audio, speech: row_for(s, audio, categories, names, speech, arms))
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
            control_meta, lambda c, audio, speech: control_row_for(c, audio, speech, categories, names))
    mismatched += number_problems([*rows_meta, *control_meta])
    if mismatched:
        raise _refusal(mismatched)

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


def agreement_for_release(agreement: dict[str, Any]) -> dict[str, Any]:
    """What the release states about agreement: the statistics and counts, never an annotator's id (the
    report's `annotators` and `not_listened` name them; only the total of the latter goes out)."""
    out = {k: agreement.get(k) for k in ("protocol", "overall", "per_category", "consensus", "level", "labels")}
    if agreement.get("arms"):
        out["arms"] = {arm: {k: v for k, v in entry.items() if k in ("overall", "per_category", "n_ratings")}
                       for arm, entry in agreement["arms"].items()}
    for key in ("controls", "rejected_by_arm"):
        if key in agreement:
            out[key] = agreement[key]
    if "not_listened" in agreement:
        out["labels_not_listened"] = sum((agreement.get("not_listened") or {}).values())
    return out


def _one_rate(refs: Iterable[AudioRef | None]) -> int | None:
    rates = {ref.sample_rate for ref in refs if ref is not None}
    return rates.pop() if len(rates) == 1 else None


def write_checksums(root: Path) -> None:
    lines = [f"{_sha256_file(p)}  {p.relative_to(root).as_posix()}"
             for p in sorted(root.rglob("*")) if p.is_file() and p.name != "checksums.sha256"]
    (root / "checksums.sha256").write_text("\n".join(lines) + "\n")


def code_version() -> str:
    """git describe of this checkout when it is one, else the installed package version."""
    if (REPO_ROOT / ".git").exists():
        try:
            proc = subprocess.run(["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--tags"],
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

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--out", required=True, help="release folder to write (replaced whole if a release)")
    parser.add_argument("--version", default="0.1.0", help="release version X.Y.Z; also the Hub tag")
    parser.add_argument("--splits", default="test", help="'test' (default) or e.g. 'dev=0.2,test=0.8'")
    parser.add_argument("--max-shard-mb", type=float, default=DEFAULT_SHARD_BYTES / 2**20)
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="push the release as a Hub dataset")
    parser.add_argument("--private", action="store_true",
                        help="push privately: create the Hub dataset private; refuse if it exists and is public")
    parser.add_argument("--make-private", action="store_true",
                        help="with --push-to-hub: make an existing public Hub dataset private, then push")
    parser.add_argument("--dry-run", action="store_true", help="with --push-to-hub: print the upload, send nothing")
    args = parser.parse_args(argv)
    for flag in ("dry_run", "private", "make_private"):
        if getattr(args, flag) and not args.push_to_hub:
            parser.error(f"--{flag.replace('_', '-')} needs --push-to-hub")
    if args.push_to_hub and not re.match(r"^[\w.-]+/[\w.-]+$", args.push_to_hub):
        parser.error(f"--push-to-hub wants ORG/NAME, got '{args.push_to_hub}'")

    inputs = read_inputs(args.workspace)
    if args.push_to_hub:
        if inputs.demo:
            raise WorkbenchError("the validated labels come from scripted demo annotators; a demo release "
                                 "is never pushed (export it without --push-to-hub)")
        if not args.dry_run:
            hub_token()  # fail before the export, not after
    summary = export_release(inputs, args.out, args.version, args.splits, int(args.max_shard_mb * 2**20))
    counts = ", ".join(f"{k}: {v}" for k, v in summary.split_counts.items())
    print(f"wrote {summary.out}: {sum(summary.split_counts.values())} samples ({counts}), "
          + (f"{summary.num_controls} control(s) in config '{CONTROLS_CONFIG}', " if summary.num_controls else "")
          + f"{len(summary.files)} files, {summary.total_bytes / 1e6:.1f} MB"
          + (f" [DEMO release: {demo_share(inputs.label_sources)}]" if summary.demo else ""))
    if args.push_to_hub:
        if args.dry_run:
            print(describe_push(summary, args.push_to_hub, args.private, args.make_private))
        else:
            oid, private = push_release(summary, args.push_to_hub, args.private, args.make_private)
            print(f"pushed to {hub_endpoint()}/datasets/{args.push_to_hub} ({'private' if private else 'public'}) "
                  f"at commit {oid}, tag {summary.version}")
    return 0


if __name__ == "__main__":
    from construction.core.cli import run_main

    run_main(main)
