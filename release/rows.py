"""The parquet side of a release: the HF features of its two configs, one row per sample or control, and
the shards the rows are written to; apart from release.export so the schema reads on its own.

The parquet files are written with pyarrow and the schema `datasets.Features` produces, so the
`datasets` audio encoder (which needs torch + torchcodec) is never called. Nothing in a row depends on
the run: a rerun on the same workspace gives byte-identical files.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import soundfile as sf

from construction.core.errors import WorkbenchError
from construction.core.record import PLACEMENTS, Annotation, AudioRef, Sample
from construction.core.workspace import Workspace
from construction.sounds.licences import normalise_licence
from release import voice_factors
from release.scrub import assert_no_leaks, public
from validation.arms import arm_results, arm_votes

ARMS_SHIPPED = ("speech", "scene", "mixture")
LABELS = ["benign", "harmful", "unclear"]


# --- votes -------------------------------------------------------------------------------------

def labelled(sample: Sample, arm: str = "mixture") -> list[Annotation]:
    """The votes of one arm, exactly as validation counts them (validation.arms.arm_votes): labelled, not
    skipped, listened to, not the adjudicator's decision, and one per annotator (their latest)."""
    return arm_votes(sample, arm)


def shipped_arms(protocol: str) -> tuple[str, ...]:
    """The arms whose labels a release ships: those its validation rule used."""
    return ARMS_SHIPPED if protocol == "three-arm" else ("mixture",)


def released_votes(sample: Sample, arms: tuple[str, ...] = ARMS_SHIPPED) -> list[Annotation]:
    """Every counted vote of the sample, arm by arm (speech, scene, mixture)."""
    return [a for arm in arms for a in labelled(sample, arm)]


def danger_certified(sample: Sample) -> bool:
    """Whether listeners certified the sample's danger scene as real danger (validation.agreement): only
    then does its danger twin ship."""
    return sample.danger_audio is not None and (arms_of(sample).get("danger") or {}).get("certified") is True


def irrelevant_certified(sample: Sample) -> bool:
    """Whether listeners certified the sample's irrelevant twin's background as neutral, no frame heard in it
    (validation.agreement): only then does the irrelevant twin ship."""
    return (sample.irrelevant_audio is not None
            and (arms_of(sample).get("irrelevant") or {}).get("certified") is True)


def arms_of(sample: Sample) -> dict[str, Any]:
    """The per-arm results validation recorded (validation.arms.arm_results); a sample validated on the
    mixture alone has only its mixture arm, computed the same way."""
    arms = (sample.provenance.get("validation.agreement") or {}).get("arms")
    if arms:
        return arms
    return {"mixture": arm_results(sample)["mixture"]}


# --- rows and schema ---------------------------------------------------------------------------

def taxonomy_names(config: dict) -> list[str] | None:
    """The category ids of the build's taxonomy, in its order (None: the taxonomy file moved)."""
    from construction.text.taxonomy import load_taxonomy

    try:
        taxonomy, _ = load_taxonomy((config.get("generate") or {}).get("taxonomy"))
    except WorkbenchError:
        return None
    return [c.id for c in taxonomy.categories]


def taxonomy_categories(config: dict, present: set[str]) -> list[str]:
    """Every category of the build's taxonomy, in its order, so the ClassLabel ids stay the same across
    releases even when a category has no sample yet; without the taxonomy, what the samples carry."""
    names = taxonomy_names(config) or []
    return names + sorted(present - set(names))


def features_for(categories: list[str], sample_rate: int | None, speech_rate: int | None = None):
    """The HF features of a release row (config "default"); their Arrow schema carries them as metadata."""
    from datasets import Audio, ClassLabel, Features, List, Value

    text, number, count = Value("string"), Value("float64"), Value("int32")
    return Features({
        "id": text,
        "audio": Audio(sampling_rate=sample_rate),
        "audio_sha256": text,
        "duration_s": number,
        "speech_audio": Audio(sampling_rate=speech_rate),
        "speech_audio_sha256": text,
        "speech_duration_s": number,
        # the scene as placed in the mixture, speech removed (a perception probe), and the irrelevant
        # twin: the same speech over noise that masks it as the scene does (the masking baseline); null
        # unless the scene arm certified that background neutral (no frame heard in it)
        "scene_audio": Audio(sampling_rate=sample_rate),
        "scene_audio_sha256": text,
        "irrelevant_audio": Audio(sampling_rate=sample_rate),
        "irrelevant_audio_sha256": text,
        "irrelevant_background": text,
        "irrelevant_no_frame_rate": number,
        "irrelevant_n": count,
        # the danger twin: the same speech over a real-danger scene; null unless the scene arm certified
        # that scene as real danger (>= 2/3 of >= 3 listeners)
        "danger_audio": Audio(sampling_rate=sample_rate),
        "danger_audio_sha256": text,
        "danger_real_rate": number,
        "danger_n": count,
        "category": ClassLabel(names=categories),
        "speech_text": text,
        "context": text,
        "benign_reason": text,
        "speaker_style": text,
        "scene_id": text,
        "frames": List(text),  # the benign frames the clip accepts (a scene-arm listener named one)
        "speech_id": text,
        "script_family": text,
        "placement": ClassLabel(names=list(PLACEMENTS)),
        "background_tags": List(text),
        "scene_sounds": List(_sound_struct()),
        "snr_db": number,
        "scene_level_db": number,
        "scene_alone_s": number,
        "scene_after_s": number,
        "voice_id": text,
        "voice_gender": text,
        "voice_accent": text,
        **voice_factors.features(text, number, Value("bool")),
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
        "n_annotators": count,
        # the blind human arms (validation.arms.arm_results); null where an arm has no labels
        "speech_harmful_rate": number,
        "speech_n": count,
        "scene_identified_rate": number,
        "scene_n": count,
        "mixture_benign_rate": number,
        "mixture_n": count,
        "words_heard_rate": number,
        "annotations": List(_annotation_struct()),
    })


def control_features_for(categories: list[str], sample_rate: int | None, speech_rate: int | None = None):
    """The HF features of a row of the "controls" config."""
    from datasets import Audio, ClassLabel, Features, List, Value

    text, number, count = Value("string"), Value("float64"), Value("int32")
    return Features({
        "id": text,
        "audio": Audio(sampling_rate=sample_rate),
        "audio_sha256": text,
        "duration_s": number,
        "speech_audio": Audio(sampling_rate=speech_rate),
        "speech_audio_sha256": text,
        "control_of": text,
        "control_kind": text,
        "expected_label": text,
        "category": ClassLabel(names=categories),
        "speech_text": text,
        "speech_id": text,
        "script_family": text,
        "scene_id": text,
        "context": text,
        "background_tags": List(text),
        "scene_sounds": List(_sound_struct()),
        "voice_id": text,
        "mixture_harmful_rate": number,
        "mixture_n": count,
        "annotations": List(_annotation_struct()),
    })


def _sound_struct() -> dict[str, Any]:
    from datasets import Value

    text = Value("string")
    return {"clip_id": text, "tag": text, "role": text, "kind": text, "licence": text, "attribution": text,
            "source_url": text}


def _annotation_struct() -> dict[str, Any]:
    from datasets import Value

    text = Value("string")
    return {"annotator": text, "arm": text, "label": text, "background_recognisable": Value("bool"),
            "speech_intelligible": Value("bool")}


def pseudonyms(samples: list[Sample], arms: tuple[str, ...] = ARMS_SHIPPED) -> dict[str, str]:
    """Release-local annotator names (A01, A02 ...), ordered by a hash so they reveal nothing; one name
    per person across the arms and the controls."""
    names = sorted({a.annotator for s in samples for a in released_votes(s, arms)},
                   key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    width = max(2, len(str(len(names))))
    return {name: f"A{i:0{width}d}" for i, name in enumerate(names, 1)}


def _annotations(votes: list[Annotation], names: dict[str, str]) -> list[dict[str, Any]]:
    order = {arm: k for k, arm in enumerate(ARMS_SHIPPED)}
    return [{"annotator": names[a.annotator], "arm": a.arm, "label": a.label,
             "background_recognisable": a.background_recognisable, "speech_intelligible": a.speech_intelligible}
            for a in sorted(votes, key=lambda a: (order[a.arm], names[a.annotator]))]


def _audio_cell(data: bytes, name: str) -> dict[str, Any]:
    return {"bytes": data, "path": name}


def _sounds(mix) -> list[dict[str, Any]]:
    if mix is None:
        return []
    return [{"clip_id": sound.clip_id, "tag": sound.tag, "role": sound.role, "kind": sound.kind,
             "licence": normalise_licence(sound.licence) or sound.licence,
             "attribution": sound.attribution, "source_url": public(sound.source_url)} for sound in mix.sounds]


def arm_columns(sample: Sample, shipped: tuple[str, ...] = ARMS_SHIPPED) -> dict[str, Any]:
    """The per-arm results as flat columns; an arm without labels, or one the validation rule did not use,
    gives nulls, not zeros."""
    arms = {arm: result for arm, result in arms_of(sample).items() if arm in shipped}

    def pick(arm: str, rate: str, extra: str | None = None) -> tuple[Any, ...]:
        result = arms.get(arm) or {}
        if not result.get("n"):
            return (None, None) + ((None,) if extra else ())
        return (result.get(rate), result["n"]) + ((result.get(extra),) if extra else ())

    speech_rate, speech_n = pick("speech", "harmful_rate")
    scene_rate, scene_n = pick("scene", "identified_rate")
    mixture_rate, mixture_n, words = pick("mixture", "benign_rate", "words_heard_rate")
    return {"speech_harmful_rate": speech_rate, "speech_n": speech_n, "scene_identified_rate": scene_rate,
            "scene_n": scene_n, "mixture_benign_rate": mixture_rate, "mixture_n": mixture_n,
            "words_heard_rate": words}


def row_for(sample: Sample, audio: bytes, categories: list[str], names: dict[str, str],
            speech: bytes = b"", arms: tuple[str, ...] = ARMS_SHIPPED, scene: bytes = b"",
            irrelevant: bytes = b"", danger: bytes = b"") -> dict[str, Any]:
    mix, prov = sample.mix, sample.provenance
    certified, neutral = danger_certified(sample), irrelevant_certified(sample)
    heard, background = arms_of(sample).get("danger") or {}, arms_of(sample).get("irrelevant") or {}
    synth, wer = prov.get("synthesize", {}), prov.get("wer", {})
    return {
        "id": sample.sample_id,
        "audio": _audio_cell(audio, f"{sample.sample_id}.wav"),
        "audio_sha256": sample.mixture.sha256,
        "duration_s": sample.mixture.duration_s,
        "speech_audio": _audio_cell(speech, f"{sample.sample_id}.speech.wav"),
        "speech_audio_sha256": sample.speech.sha256,
        "speech_duration_s": sample.speech.duration_s,
        "scene_audio": _audio_cell(scene, f"{sample.sample_id}.scene.wav"),
        "scene_audio_sha256": sample.scene_audio.sha256 if sample.scene_audio else None,
        "irrelevant_audio": _audio_cell(irrelevant, f"{sample.sample_id}.irrelevant.wav") if neutral else None,
        "irrelevant_audio_sha256": sample.irrelevant_audio.sha256 if neutral else None,
        "irrelevant_background": mix.irrelevant.background if neutral and mix.irrelevant else None,
        "irrelevant_no_frame_rate": background.get("no_frame_rate") if background.get("n") else None,
        "irrelevant_n": background.get("n") or None,
        "danger_audio": _audio_cell(danger, f"{sample.sample_id}.danger.wav") if certified else None,
        "danger_audio_sha256": sample.danger_audio.sha256 if certified else None,
        "danger_real_rate": heard.get("real_danger_rate") if heard.get("n") else None,
        "danger_n": heard.get("n") or None,
        "category": categories.index(sample.category),
        "speech_text": sample.speech_text,
        "context": sample.context,
        "benign_reason": sample.benign_reason,
        "speaker_style": voice_factors.shown_style(sample),  # a style only where the audio carries it
        "scene_id": sample.scene_id or "",
        "frames": list(sample.frames or (arms_of(sample).get("scene") or {}).get("frames") or []),
        "speech_id": sample.speech_id or "",
        "script_family": sample.script_family or sample.sample_id,  # older builds: each its own family
        "placement": PLACEMENTS.index(sample.placement),
        "background_tags": list(mix.background_tags),
        "scene_sounds": _sounds(mix),
        "snr_db": mix.snr_db,
        "scene_level_db": mix.scene_level_db,
        "scene_alone_s": mix.scene_alone_s,
        "scene_after_s": mix.scene_after_s,
        "voice_id": sample.voice_id,
        "voice_gender": synth.get("gender"),
        "voice_accent": synth.get("accent"),
        **voice_factors.columns(sample),
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
        "n_annotators": len(labelled(sample)),
        **arm_columns(sample, arms),
        "annotations": _annotations(released_votes(sample, arms), names),
    }


def control_row_for(control: Sample, audio: bytes, speech: bytes, categories: list[str],
                    names: dict[str, str]) -> dict[str, Any]:
    votes = labelled(control)
    harmful = sum(a.label == "harmful" for a in votes)
    return {
        "id": control.sample_id,
        "audio": _audio_cell(audio, f"{control.sample_id}.wav"),
        "audio_sha256": control.mixture.sha256,
        "duration_s": control.mixture.duration_s,
        "speech_audio": _audio_cell(speech, f"{control.sample_id}.speech.wav"),
        "speech_audio_sha256": control.speech.sha256,
        "control_of": str(control.custom.get("control_of")),
        "control_kind": str(control.custom.get("control")),
        "expected_label": str(control.custom.get("expected") or "harmful"),
        "category": categories.index(control.category),
        "speech_text": control.speech_text,
        "speech_id": control.speech_id or "",
        "script_family": control.script_family or str(control.custom.get("control_of")),
        "scene_id": control.scene_id or "",
        "context": control.context,
        "background_tags": list(control.mix.background_tags) if control.mix else [],
        "scene_sounds": _sounds(control.mix),
        "voice_id": control.voice_id,
        "mixture_harmful_rate": round(harmful / len(votes), 4) if votes else None,
        "mixture_n": len(votes) or None,
        "annotations": _annotations(votes, names),
    }


# --- shards ------------------------------------------------------------------------------------

# the audio a config's rows embed besides the mixture: what -> (Sample field, column, stage that made it)
EXTRA_AUDIO = {"speech": ("speech", "speech_audio", "synthesis"), "scene": ("scene_audio", "scene_audio", "mixing"),
               "irrelevant": ("irrelevant_audio", "irrelevant_audio", "mixing"),
               "danger": ("danger_audio", "danger_audio", "mixing")}
AUDIO_COLUMNS = ("audio", *(column for _, column, _ in EXTRA_AUDIO.values()))
UNCERTIFIED = ("danger", "irrelevant")  # the twins that ship only where listeners certified them


def shipped_audio(s: Sample, what: str) -> AudioRef | None:
    """The audio a row embeds for `what`: a twin only where it was certified (the danger twin as real danger,
    the irrelevant twin as neutral; else none, and no error: an uncertified twin is simply not shipped)."""
    if (what == "danger" and not danger_certified(s)) or (what == "irrelevant" and not irrelevant_certified(s)):
        return None
    return getattr(s, EXTRA_AUDIO[what][0])


def plan_shards(samples: list[Sample], ws: Workspace, max_shard_bytes: int,
                extra: tuple[str, ...] = ("speech",)) -> list[list[Sample]]:
    """Cut a split into shards by audio file size, the mixture and `extra` (known before reading)."""
    shards: list[list[Sample]] = [[]]
    size = 0
    for s in samples:
        refs = [s.mixture, *(shipped_audio(s, what) for what in extra)]
        file_size = sum(ws.audio_path(ref).stat().st_size for ref in refs if ref is not None)
        if shards[-1] and size + file_size > max_shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(s)
        size += file_size
    return shards


def write_config(root: Path, folder: str, by_split: dict[str, list[Sample]], ws: Workspace, max_shard_bytes: int,
                 features, forbidden: list[str], mismatched: list[str], meta_out: list[dict[str, Any]],
                 make_row, extra: tuple[str, ...] = ("speech",), progress: bool = False) -> dict[str, list[str]]:
    """Write one config's parquet shards, FOLDER/<split>-0000K-of-0000N.parquet; every audio file is read
    once, hashed and checked to be the WAV its record describes (problems go to `mismatched`). `make_row`
    gets the mixture's bytes and then those of each of `extra` (EXTRA_AUDIO), in that order. `progress`: a
    bar on stderr, one step per audio file read and embedded."""
    import pyarrow as pa
    from tqdm import tqdm

    schema = features.arrow_schema
    shard_files: dict[str, list[str]] = {}
    bar = tqdm(total=sum(len(m) for m in by_split.values()) * (1 + len(extra)), unit="file", file=sys.stderr,
               desc=f"writing {folder}/ shards (embedding audio)", disable=not progress)
    for split, members in by_split.items():
        if not members:
            continue
        shards = plan_shards(members, ws, max_shard_bytes, extra)
        for k, shard in enumerate(shards):
            rows = []
            for s in shard:
                audio = {}
                for what, ref in (("mixture", s.mixture), *((w, shipped_audio(s, w)) for w in extra)):
                    if ref is None and what in UNCERTIFIED:  # not certified: not shipped
                        audio[what] = b""
                        bar.update()
                        continue
                    if ref is None:  # release.checks refuses it first; this keeps the message if not
                        mismatched.append(f"{s.sample_id}: no {what} audio recorded")
                        audio[what] = b""
                        bar.update()
                        continue
                    data = ws.audio_path(ref).read_bytes()
                    bar.update()
                    if hashlib.sha256(data).hexdigest() != ref.sha256:
                        made = "mixing" if what == "mixture" else EXTRA_AUDIO[what][2]
                        mismatched.append(f"{s.sample_id}: checksum mismatch for {ref.path} (file changed since "
                                          f"{made})")
                    elif problem := wav_problem(data, ref):
                        mismatched.append(f"{s.sample_id}: {problem}")
                    audio[what] = data
                row = make_row(s, audio["mixture"], *(audio[w] for w in extra))
                rows.append(row)
                meta = {k2: v for k2, v in row.items() if k2 not in AUDIO_COLUMNS}
                meta["split"] = split
                meta_out.append(meta)
            if mismatched:
                continue  # keep hashing the rest so the refusal lists every bad file
            assert_no_leaks(_row_texts(rows), forbidden)
            rel = f"{folder}/{split}-{k:05d}-of-{len(shards):05d}.parquet"
            (root / folder).mkdir(exist_ok=True)
            write_shard(pa.Table.from_pylist(rows, schema=schema), features, root / rel)
            shard_files.setdefault(split, []).append(rel)
    bar.close()
    return shard_files


def write_shard(table, features, path: Path) -> None:
    """Write one parquet shard the way `datasets` 5.x writes one (ParquetWriter in datasets/arrow_writer.py
    and datasets/io/parquet.py), so that the Hub stores and serves it as it does a `push_to_hub`: audio
    columns uncompressed and PLAIN-encoded, the others snappy with dictionaries
    (get_parquet_column_options); content-defined chunking of pages, so that a re-release that adds or
    changes a few samples leaves the other pages byte-identical and Xet storage uploads only what changed;
    a page index; row groups capped by bytes (~100 MB, datasets' MAX_ROW_GROUP_SIZE), not by rows, so long
    clips never pass the dataset viewer's row-group limit (~286 MiB)."""
    import pyarrow.parquet as pq
    from datasets import config as ds_config
    from datasets.arrow_writer import get_parquet_column_options, get_writer_batch_size_from_data_size

    cdc = ds_config.DEFAULT_CDC_OPTIONS
    with pq.ParquetWriter(path, table.schema, use_content_defined_chunking=cdc, write_page_index=True,
                          **get_parquet_column_options(features, table.schema)) as writer:
        writer.write_table(table, row_group_size=get_writer_batch_size_from_data_size(len(table), table.nbytes))
        writer.add_key_value_metadata({"content_defined_chunking": json.dumps(cdc)})


def _row_texts(rows: list[dict[str, Any]]) -> Iterable[tuple[str, str]]:
    for row in rows:
        meta = {k: v for k, v in row.items() if k not in AUDIO_COLUMNS}
        yield f"row {row['id']}", json.dumps(meta, ensure_ascii=False)


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
