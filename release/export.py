"""Export the validated samples as a Hugging Face dataset folder, and optionally push it to the Hub.

    python -m release.export --workspace W --out DIR [--version X.Y.Z] [--splits test|dev=0.2,test=0.8]
                             [--push-to-hub ORG/NAME] [--private] [--dry-run]

DIR (written whole into a temp folder next to it, then renamed into place):
    README.md                          dataset card (YAML front matter + prose), see release.card
    ATTRIBUTION.md                     every background clip and voice with its source and licence
    release.json                       version, code version, licence, counts, agreement, shards
    build_config.yaml                  the workspace's resolved config (no secrets, no local paths)
    checksums.sha256                   sha256 of every other file (`sha256sum -c checksums.sha256`)
    data/<split>-0000K-of-0000N.parquet  rows sorted by id, the mixture WAV bytes embedded, HF features
                                       (Audio / ClassLabel / Value) in the schema metadata
    plots/*.png                        category mix, SNR and WER histograms, alpha per category

The parquet files are written with pyarrow and the schema `datasets.Features` produces, so the
`datasets` audio encoder (which needs torch + torchcodec) is never called. Nothing in a row depends on
the run: a rerun on the same workspace gives byte-identical files.

Push: `huggingface_hub.HfApi` against $HF_ENDPOINT (default the Hub), token only from $HF_TOKEN;
create_repo(exist_ok) + upload_folder + a tag named after the version. A release whose labels came
from scripted demo annotators (annotation source "demo") says so on its card and is never pushed.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import fcntl
import hashlib
import io
import json
import logging
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

import soundfile as sf
import yaml

from construction.errors import WorkbenchError
from construction.record import PLACEMENTS, Annotation, AudioRef, Sample
from construction.sounds import compatible, normalise_licence
from construction.workspace import Workspace, fsync_dir, reporting_write_errors

FORMAT = "aor-bench-release/1"  # marks a folder as ours, so a rerun may replace it
MANIFEST = "validated"
LABELS = ["benign", "harmful", "unclear"]
RELEASABLE = "benign"  # the benchmark holds clips whose context makes the speech benign
DEMO_SOURCE = "demo"
ADJUDICATION_SOURCE = "adjudication"  # validation.agreement stores the adjudicator's decision this way
DEFAULT_LICENCE = "CC-BY-4.0"
DEFAULT_SHARD_BYTES = 500 * 1024 * 1024  # the Hub's recommended parquet shard size
ROW_GROUP_ROWS = 100  # small row groups keep the Hub's viewer fast on audio
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
SPLIT_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SECRET_KEY_RE = re.compile(r"(token|secret|password|passwd|api_?key|credential)s?$", re.I)
SECRET_ENV_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|API_?KEY|CREDENTIAL)", re.I)
REPO_ROOT = Path(__file__).resolve().parents[1]


# --- inputs ------------------------------------------------------------------------------------

@dataclass
class ReleaseInputs:
    workspace: Workspace
    samples: list[Sample]
    agreement: dict[str, Any]
    config: dict[str, Any]  # the workspace's config snapshot, as written (scrubbed on output)

    @property
    def release_licence(self) -> str:
        return str(self.config.get("release_licence") or DEFAULT_LICENCE)

    @property
    def demo(self) -> bool:
        return any(a.source == DEMO_SOURCE for s in self.samples for a in s.annotations)


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
    return ReleaseInputs(ws, samples, agreement, config)


def labelled(sample: Sample) -> list[Annotation]:
    """The votes, as validation counts them: labelled, not cancelled, not the adjudicator's decision,
    and one per annotator (their last)."""
    last: dict[str, Annotation] = {}
    for a in sample.annotations:
        if a.label is not None and not a.cancelled and a.source != ADJUDICATION_SOURCE:
            last.pop(a.annotator, None)
            last[a.annotator] = a
    return list(last.values())


def check_samples(inputs: ReleaseInputs, verify_checksums: bool = True) -> list[str]:
    """Every reason a sample cannot be released, one line each (empty list: all good)."""
    problems: list[str] = []
    licence = inputs.release_licence
    compatible(DEFAULT_LICENCE, licence)  # raises a clear error for an unsupported release licence
    seen: set[str] = set()
    for s in inputs.samples:
        sid = s.sample_id
        if sid in seen:
            problems.append(f"{sid}: listed twice in the manifest")
        seen.add(sid)
        if not labelled(s) and s.decided_by != "adjudication":
            problems.append(f"{sid}: no labels")
        if s.consensus_label is None:
            problems.append(f"{sid}: no consensus label")
        elif s.consensus_label != RELEASABLE:
            problems.append(f"{sid}: consensus '{s.consensus_label}' is not releasable (only '{RELEASABLE}')")
        if s.mix is None:
            problems.append(f"{sid}: no mix recipe")
        else:
            for sound in s.mix.sounds:
                if not compatible(normalise_licence(sound.licence) or sound.licence, licence):
                    problems.append(f"{sid}: background {sound.clip_id} is under {sound.licence}, "
                                    f"incompatible with the {licence} release")
        if s.mixture is None:
            problems.append(f"{sid}: no mixture audio")
            continue
        try:
            path = inputs.workspace.audio_path(s.mixture)
        except WorkbenchError as exc:
            problems.append(f"{sid}: {exc}")
            continue
        if not path.is_file():
            problems.append(f"{sid}: audio file missing: {s.mixture.path}")
        elif verify_checksums and _sha256_file(path) != s.mixture.sha256:
            problems.append(f"{sid}: checksum mismatch for {s.mixture.path} (file changed since mixing)")
    return problems


def wav_problem(audio: bytes, ref: AudioRef) -> str | None:
    """Why these bytes are not the WAV the record describes (None: they are). Only audio goes out."""
    try:
        info = sf.info(io.BytesIO(audio))
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        return f"{ref.path} is not a readable WAV file ({exc})"
    if info.format != "WAV" or info.channels != 1 or info.samplerate != ref.sample_rate:
        return (f"{ref.path} is {info.format} {info.channels} ch {info.samplerate} Hz, the record says "
                f"mono WAV at {ref.sample_rate} Hz")
    if abs(info.frames / info.samplerate - ref.duration_s) > 0.001:
        return f"{ref.path} lasts {info.frames / info.samplerate:.4f} s, the record says {ref.duration_s} s"
    return None


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# --- splits ------------------------------------------------------------------------------------

def parse_splits(spec: str) -> dict[str, float]:
    """'test' or 'dev=0.2,test=0.8' -> {name: fraction}; fractions must sum to 1."""
    splits: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, fraction = part.partition("=")
        name = name.strip()
        if not SPLIT_RE.match(name) or name in splits:
            raise WorkbenchError(f"bad split name '{name}' in '{spec}' (lower_snake_case, each once)")
        try:
            value = float(fraction) if fraction else 1.0
        except ValueError:
            raise WorkbenchError(f"bad split fraction '{fraction}' in '{spec}'") from None
        if not 0 < value <= 1:
            raise WorkbenchError(f"split fraction for '{name}' must be in (0, 1], got {value}")
        splits[name] = value
    if not splits or abs(sum(splits.values()) - 1.0) > 1e-6:
        raise WorkbenchError(f"split fractions in '{spec}' must sum to 1")
    return splits


def assign_splits(samples: list[Sample], splits: dict[str, float]) -> dict[str, list[Sample]]:
    """Stratified by category, ordered by a hash of the id: stable across reruns and machines."""
    out: dict[str, list[Sample]] = {name: [] for name in splits}
    by_category: dict[str, list[Sample]] = {}
    for s in samples:
        by_category.setdefault(s.category, []).append(s)
    for category in sorted(by_category):
        group = sorted(by_category[category], key=lambda s: hashlib.sha256(s.sample_id.encode()).hexdigest())
        # largest-remainder rounding so the counts add up to the group size
        exact = {name: frac * len(group) for name, frac in splits.items()}
        counts = {name: int(v) for name, v in exact.items()}
        by_remainder = sorted(splits, key=lambda n: (-(exact[n] - counts[n]), list(splits).index(n)))
        for name in by_remainder[:len(group) - sum(counts.values())]:
            counts[name] += 1
        start = 0
        for name in splits:
            out[name].extend(group[start:start + counts[name]])
            start += counts[name]
    return {name: sorted(rows, key=lambda s: s.sample_id) for name, rows in out.items()}


# --- scrubbing ---------------------------------------------------------------------------------

def public(value: Any) -> Any:
    """A copy safe to publish: secret-looking keys dropped, local paths cut to their last part."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items()
                if not (SECRET_KEY_RE.search(str(k)) and not str(k).endswith("_env"))}
    if isinstance(value, list | tuple):
        return [public(v) for v in value]
    if isinstance(value, str):
        if value.startswith(("/", "~", "./", "../", "file:")) or re.match(r"^[A-Za-z]:[\\/]", value):
            return "<local>/" + re.split(r"[\\/]", value.rstrip("/\\"))[-1]
        return re.sub(r"(https?://)[^/@\s]+@", r"\1", value)  # credentials inside URLs
    return value


def forbidden_strings(workspace_root: Path) -> list[str]:
    """Strings that must never appear in a release: the workspace path and secret env values."""
    found = [str(workspace_root)]
    for name, value in os.environ.items():
        if SECRET_ENV_RE.search(name) and not name.endswith("_ENV") and len(value) >= 8:
            found.append(value)
    return found


def assert_no_leaks(texts: Iterable[tuple[str, str]], forbidden: list[str]) -> None:
    """Refuse to publish if a forbidden string made it into any text (named by where, not what)."""
    for where, text in texts:
        for secret in forbidden:
            if secret and secret in text:
                what = "the workspace path" if secret == forbidden[0] else "a secret from the environment"
                raise WorkbenchError(f"refusing to write the release: {what} appears in {where}")


# --- rows and schema ---------------------------------------------------------------------------

def taxonomy_categories(config: dict, present: set[str]) -> list[str]:
    """Every category of the build's taxonomy, in its order, so the ClassLabel ids stay the same across
    releases even when a category has no sample yet; categories outside it are appended."""
    from construction.errors import WorkbenchError
    from construction.taxonomy import load_taxonomy

    try:
        taxonomy, _ = load_taxonomy((config.get("generate") or {}).get("taxonomy"))
        names = [c.id for c in taxonomy.categories]
    except WorkbenchError:  # the taxonomy file moved: fall back to what the samples carry
        names = []
    return names + sorted(present - set(names))


def features_for(categories: list[str], sample_rate: int | None):
    """The HF features of a release row; their Arrow schema carries them as metadata."""
    from datasets import Audio, ClassLabel, Features, List, Value

    text, number = Value("string"), Value("float64")
    return Features({
        "id": text,
        "audio": Audio(sampling_rate=sample_rate),
        "audio_sha256": text,
        "duration_s": number,
        "category": ClassLabel(names=categories),
        "speech_text": text,
        "context": text,
        "benign_reason": text,
        "speaker_style": text,
        "scene_id": text,
        "speech_id": text,
        "script_family": text,
        "placement": ClassLabel(names=list(PLACEMENTS)),
        "background_tags": List(text),
        "scene_sounds": List({"clip_id": text, "tag": text, "role": text, "kind": text, "licence": text,
                              "attribution": text, "source_url": text}),
        "snr_db": number,
        "scene_level_db": number,
        "scene_alone_s": number,
        "scene_after_s": number,
        "voice_id": text,
        "voice_gender": text,
        "voice_accent": text,
        "tts_backend": text,
        "asr_model": text,
        "transcript_speech": text,
        "transcript_mixture": text,
        "wer_speech": number,
        "wer_mixture": number,
        "cer_mixture": number,
        "consensus_label": ClassLabel(names=LABELS),
        "agreement": number,
        "decided_by": text,
        "n_annotators": Value("int32"),
        "annotations": List({"annotator": text, "label": text, "background_recognisable": Value("bool"),
                             "speech_intelligible": Value("bool")}),
    })


def pseudonyms(samples: list[Sample]) -> dict[str, str]:
    """Release-local annotator names (A01, A02 ...), ordered by a hash so they reveal nothing."""
    names = sorted({a.annotator for s in samples for a in labelled(s)},
                   key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    width = max(2, len(str(len(names))))
    return {name: f"A{i:0{width}d}" for i, name in enumerate(names, 1)}


def row_for(sample: Sample, audio: bytes, categories: list[str], names: dict[str, str]) -> dict[str, Any]:
    mix, prov = sample.mix, sample.provenance
    synth, wer = prov.get("synthesize", {}), prov.get("wer", {})
    votes = labelled(sample)
    return {
        "id": sample.sample_id,
        "audio": {"bytes": audio, "path": f"{sample.sample_id}.wav"},
        "audio_sha256": sample.mixture.sha256,
        "duration_s": sample.mixture.duration_s,
        "category": categories.index(sample.category),
        "speech_text": sample.speech_text,
        "context": sample.context,
        "benign_reason": sample.benign_reason,
        "speaker_style": sample.speaker_style,
        "scene_id": sample.scene_id or "",
        "speech_id": sample.speech_id or "",
        "script_family": sample.script_family or sample.sample_id,  # older builds: each its own family
        "placement": PLACEMENTS.index(sample.placement),
        "background_tags": list(mix.background_tags),
        "scene_sounds": [{"clip_id": sound.clip_id, "tag": sound.tag, "role": sound.role, "kind": sound.kind,
                          "licence": normalise_licence(sound.licence) or sound.licence,
                          "attribution": sound.attribution, "source_url": public(sound.source_url)}
                         for sound in mix.sounds],
        "snr_db": mix.snr_db,
        "scene_level_db": mix.scene_level_db,
        "scene_alone_s": mix.scene_alone_s,
        "scene_after_s": mix.scene_after_s,
        "voice_id": sample.voice_id,
        "voice_gender": synth.get("gender"),
        "voice_accent": synth.get("accent"),
        "tts_backend": public(synth.get("backend")),
        "asr_model": public(wer.get("model")),
        "transcript_speech": sample.transcript_speech,
        "transcript_mixture": sample.transcript_mixture,
        "wer_speech": sample.wer_speech,
        "wer_mixture": sample.wer_mixture,
        "cer_mixture": sample.cer_mixture,
        "consensus_label": LABELS.index(sample.consensus_label),
        "agreement": sample.agreement,
        "decided_by": sample.decided_by,
        "n_annotators": len({a.annotator for a in votes}),
        "annotations": [{"annotator": names[a.annotator], "label": a.label,
                         "background_recognisable": a.background_recognisable,
                         "speech_intelligible": a.speech_intelligible}
                        for a in sorted(votes, key=lambda a: names[a.annotator])],
    }


def plan_shards(samples: list[Sample], ws: Workspace, max_shard_bytes: int) -> list[list[Sample]]:
    """Cut a split into shards by audio file size (known before reading)."""
    shards: list[list[Sample]] = [[]]
    size = 0
    for s in samples:
        file_size = ws.audio_path(s.mixture).stat().st_size
        if shards[-1] and size + file_size > max_shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(s)
        size += file_size
    return shards


# --- export ------------------------------------------------------------------------------------

@dataclass
class ReleaseSummary:
    out: Path
    version: str
    demo: bool
    split_counts: dict[str, int]
    files: dict[str, int] = field(default_factory=dict)  # relative path -> size in bytes

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())


def export_release(inputs: ReleaseInputs, out: str | Path, version: str = "0.1.0", splits: str = "test",
                   max_shard_bytes: int = DEFAULT_SHARD_BYTES) -> ReleaseSummary:
    """Check every sample, then write the release folder atomically (refusing with a full list)."""
    if not VERSION_RE.match(version):
        raise WorkbenchError(f"version '{version}' is not X.Y.Z")
    fractions = parse_splits(splits)
    out = Path(out).expanduser().resolve()
    with reporting_write_errors(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(out.parent):
        _recover(out)
        _check_target(out)
        problems = check_samples(inputs, verify_checksums=False)  # checksums are verified while writing
        if problems:
            problems += [p for p in check_samples(inputs) if "checksum" in p]
            raise _refusal(problems)
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
    return ReleaseSummary(out, version, inputs.demo, split_counts, files)


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
        return json.loads((path / "release.json").read_text()).get("format") == FORMAT
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
    import pyarrow as pa
    import pyarrow.parquet as pq

    from release import card

    ws, samples = inputs.workspace, inputs.samples
    categories = taxonomy_categories(inputs.config, {s.category for s in samples})
    rates = {s.mixture.sample_rate for s in samples}
    features = features_for(categories, rates.pop() if len(rates) == 1 else None)
    schema = features.arrow_schema
    names = pseudonyms(samples)
    forbidden = forbidden_strings(ws.root)
    by_split = assign_splits(samples, fractions)

    mismatched: list[str] = []
    shard_files: dict[str, list[str]] = {}
    rows_meta: list[dict[str, Any]] = []  # every row without the audio, for the card and plots
    for split, members in by_split.items():
        if not members:
            continue
        shards = plan_shards(members, ws, max_shard_bytes)
        for k, shard in enumerate(shards):
            rows = []
            for s in shard:
                audio = ws.audio_path(s.mixture).read_bytes()
                if hashlib.sha256(audio).hexdigest() != s.mixture.sha256:
                    mismatched.append(f"{s.sample_id}: checksum mismatch for {s.mixture.path} "
                                      "(file changed since mixing)")
                elif problem := wav_problem(audio, s.mixture):
                    mismatched.append(f"{s.sample_id}: {problem}")
                row = row_for(s, audio, categories, names)
                rows.append(row)
                meta = {k2: v for k2, v in row.items() if k2 != "audio"}
                meta["split"] = split
                rows_meta.append(meta)
            if mismatched:
                continue  # keep hashing the rest so the refusal lists every bad file
            assert_no_leaks(_row_texts(rows), forbidden)
            rel = f"data/{split}-{k:05d}-of-{len(shards):05d}.parquet"
            (root / "data").mkdir(exist_ok=True)
            table = pa.Table.from_pylist(rows, schema=schema)
            pq.write_table(table, root / rel, row_group_size=ROW_GROUP_ROWS, compression="zstd",
                           use_dictionary=[c for c in schema.names if c != "audio"], write_statistics=False)
            shard_files.setdefault(split, []).append(rel)
    if mismatched:
        raise _refusal(mismatched)

    split_counts = {split: len(members) for split, members in by_split.items() if members}
    info = {
        "format": FORMAT,
        "version": version,
        "code_version": code_version(),
        "release_licence": inputs.release_licence,
        "demo": inputs.demo,
        "num_samples": len(samples),
        "splits": split_counts,
        "shards": shard_files,
        "categories": dict(sorted(Counter(s.category for s in samples).items())),
        "num_annotators": len(names),
        "agreement": public({k: inputs.agreement.get(k) for k in
                             ("overall", "per_category", "consensus", "level", "labels")}),
    }
    texts = {
        "release.json": json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
        "build_config.yaml": yaml.safe_dump(public(inputs.config), sort_keys=True, allow_unicode=True),
        "ATTRIBUTION.md": card.attribution(samples, inputs.release_licence),
    }
    plots = card.write_plots(root / "plots", rows_meta, inputs.agreement, categories)
    texts["README.md"] = card.dataset_card(inputs, info, rows_meta, features, shard_files, root, plots)
    assert_no_leaks(texts.items(), forbidden)
    for rel, text in texts.items():
        (root / rel).write_text(text, encoding="utf-8")
    write_checksums(root)
    return split_counts


def _row_texts(rows: list[dict[str, Any]]) -> Iterable[tuple[str, str]]:
    for row in rows:
        meta = {k: v for k, v in row.items() if k != "audio"}
        yield f"row {row['id']}", json.dumps(meta, ensure_ascii=False)


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


# --- push --------------------------------------------------------------------------------------

def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_token() -> str:
    token = os.environ.get("HF_TOKEN", "").strip()
    if not token:
        raise WorkbenchError("HF_TOKEN is not set: export a Hugging Face write token as HF_TOKEN to push "
                             "(the token is read only from the environment)")
    return token


def describe_push(summary: ReleaseSummary, repo_id: str, private: bool) -> str:
    lines = [f"dry run: nothing sent. Would push {summary.out} to {hub_endpoint()}",
             f"  repo: datasets/{repo_id} ({'private' if private else 'public'}; created if missing)",
             f"  tag:  {summary.version}",
             f"  files: {len(summary.files)}, {summary.total_bytes / 1e6:.2f} MB"]
    lines += [f"    {size:>12,d}  {rel}" for rel, size in summary.files.items()]
    lines.append(f"  HF_TOKEN is {'set' if os.environ.get('HF_TOKEN') else 'NOT set (a real push needs it)'}")
    return "\n".join(lines)


def push_release(summary: ReleaseSummary, repo_id: str, private: bool = False) -> str:
    """create_repo + upload_folder + create_tag; returns the tagged commit id."""
    if summary.demo:
        raise WorkbenchError("this release was labelled by scripted demo annotators; refusing to push it")
    token = hub_token()
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:
        raise WorkbenchError("HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set: unset it to push to the Hub")
    for name in ("httpx", "httpx2", "httpcore"):  # one INFO line per request drowns the summary
        logging.getLogger(name).setLevel(logging.WARNING)

    endpoint = hub_endpoint()
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        tags = {t.name for t in api.list_repo_refs(repo_id, repo_type="dataset").tags}
        if summary.version in tags:
            raise WorkbenchError(f"{repo_id} already has tag {summary.version}; choose a new --version")
        commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=summary.out,
                                   commit_message=f"AOR-Bench release {summary.version}")
        api.create_tag(repo_id, tag=summary.version, revision=commit.oid, repo_type="dataset",
                       tag_message=f"AOR-Bench release {summary.version}")
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise WorkbenchError(f"{endpoint} rejected HF_TOKEN (401 Unauthorized); "
                                 "check that it is a valid write token") from None
        if status == 403:
            raise WorkbenchError(f"HF_TOKEN may not write to datasets/{repo_id} on {endpoint} (403)") from None
        raise WorkbenchError(f"push to {endpoint} failed: {_without(str(exc), token)}") from None
    except Exception as exc:  # transport errors (httpx, OSError) and client-side refusals
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("httpx", "huggingface_hub")):
            raise WorkbenchError(f"push to {endpoint} failed: {_without(str(exc), token)}") from None
        raise
    return commit.oid


def _without(text: str, token: str) -> str:
    return text.replace(token, "***")


# --- command line ------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--out", required=True, help="release folder to write (replaced whole if a release)")
    parser.add_argument("--version", default="0.1.0", help="release version X.Y.Z; also the Hub tag")
    parser.add_argument("--splits", default="test", help="'test' (default) or e.g. 'dev=0.2,test=0.8'")
    parser.add_argument("--max-shard-mb", type=float, default=DEFAULT_SHARD_BYTES / 2**20)
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="push the release as a Hub dataset")
    parser.add_argument("--private", action="store_true", help="create the Hub dataset private")
    parser.add_argument("--dry-run", action="store_true", help="with --push-to-hub: print the upload, send nothing")
    args = parser.parse_args(argv)
    if args.dry_run and not args.push_to_hub:
        parser.error("--dry-run needs --push-to-hub")
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
          f"{len(summary.files)} files, {summary.total_bytes / 1e6:.1f} MB"
          + (" [DEMO release: labels from scripted annotators]" if summary.demo else ""))
    if args.push_to_hub:
        if args.dry_run:
            print(describe_push(summary, args.push_to_hub, args.private))
        else:
            oid = push_release(summary, args.push_to_hub, args.private)
            print(f"pushed to {hub_endpoint()}/datasets/{args.push_to_hub} at commit {oid}, tag {summary.version}")
    return 0


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main)
