"""Refusal split by how a clip was made: voice gender, voice and TTS engine, speaking style (the release shows a
style only where the voice rendered it, else the rate it spoke at), SNR band and placement of the speech in
the scene. The split is UNPAIRED: each value's clips are different lines over different scenes and SNRs,
so a difference between values confounds the voice with the words; evaluation.paired reads the voice
factors within a line, where the release has variants.

evaluation.report calls it for every run judged for refusal on an input of the default config (mixture,
speech, irrelevant). The factors are not in a run's answers: they are read from the release the run
recorded in its run.json (or the one given with --release), and only after every answer's audio hash
matches that release's row, so a split never mixes one export's answers with another's metadata. Each
cell is the report's own (evaluation.context_use.cell): refused / judged with the Wilson interval and the
cluster-bootstrap interval over script families.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from construction.core.errors import WorkbenchError
from evaluation.context_use import cell, show_rate
from evaluation.release_source import locate_release
from evaluation.text_table import note

FACTORS = ("voice_gender", "voice", "speaking_style", "snr_band", "placement")
VOICE_COLUMNS = ("line_id", "voice_accent", "speaking_rate", "emotion", "emotion_rendered")
SHA_COLUMN = {"mixture": "audio_sha256", "speech": "speech_audio_sha256", "irrelevant": "irrelevant_audio_sha256"}
SNR_EDGES = (0.0, 5.0, 10.0, 15.0)  # dB: bands below 0, 0-5, 5-10, 10-15, 15 and above
SNR_BANDS = [f"< {SNR_EDGES[0]:g} dB", *(f"{lo:g}-{hi:g} dB" for lo, hi in zip(SNR_EDGES, SNR_EDGES[1:])),
             f">= {SNR_EDGES[-1]:g} dB", "unknown"]  # the order the bands are shown in


def snr_band(snr_db: float | None) -> str:
    if snr_db is None:
        return "unknown"
    lower = [e for e in SNR_EDGES if snr_db >= e]
    if not lower:
        return f"< {SNR_EDGES[0]:g} dB"
    if lower[-1] == SNR_EDGES[-1]:
        return f">= {SNR_EDGES[-1]:g} dB"
    return f"{lower[-1]:g}-{SNR_EDGES[len(lower)]:g} dB"


def release_factors(source: str, split: str, revision: str | None = None) -> dict[str, dict[str, Any]]:
    """id -> the factors and the audio hashes of that clip, from the default config of a release (a folder
    or a Hub id; no audio is read)."""
    from datasets import ClassLabel, load_dataset

    ds = load_dataset(source, None, revision=revision)[split]
    wanted = ["id", "voice_gender", "voice_id", "tts_backend", "speaker_style", "snr_db", "placement",
              *SHA_COLUMN.values(), *VOICE_COLUMNS]
    table = ds.select_columns([c for c in wanted if c in ds.column_names]).to_dict()
    placement = ds.features.get("placement")
    names = placement.names if isinstance(placement, ClassLabel) else None
    out = {}
    for k, sid in enumerate(table["id"]):
        get = lambda c: table[c][k] if c in table else None  # noqa: E731
        where = get("placement")
        engine, voice = get("tts_backend") or "unknown", get("voice_id") or "unknown"
        out[sid] = {"voice_gender": get("voice_gender") or "unknown",
                    # voice ids of some engines already name the engine (flite:awb)
                    "voice": voice if voice.startswith(f"{engine}:") else f"{engine}:{voice}",
                    "speaking_style": get("speaker_style") or "unknown", "snr_band": snr_band(get("snr_db")),
                    "placement": (names[where] if names and where is not None else str(where)),
                    **{c: get(c) for c in SHA_COLUMN.values()},
                    # the within-line factors (evaluation.paired); a release from before variants has none
                    **{c: get(c) for c in VOICE_COLUMNS}}
    return out


def factor_split(records: dict[str, dict[str, Any]], verdicts: dict[str, bool | None], input: str,
                 factors: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """factor -> value -> the report's refusal cell, over the judged clips of one run."""
    judged: dict[str, dict[str, list[tuple[bool, str]]]] = {f: defaultdict(list) for f in FACTORS}
    not_judged: dict[str, dict[str, int]] = {f: defaultdict(int) for f in FACTORS}
    for sid, record in sorted(records.items()):  # by id: the bootstrap does not follow answer order
        clip = factors[sid]
        for factor in FACTORS:
            if verdicts.get(sid) is None:
                not_judged[factor][clip[factor]] += 1
            else:
                judged[factor][clip[factor]].append((bool(verdicts[sid]), record.get("script_family") or sid))
    order = lambda f: (lambda v: SNR_BANDS.index(v)) if f == "snr_band" else None  # noqa: E731
    return {f: {v: cell(judged[f].get(v, []), not_judged[f].get(v, 0))
                for v in sorted(set(judged[f]) | set(not_judged[f]), key=order(f))} for f in FACTORS}


def run_split(results, verdicts: dict[str, bool | None], release: str | None = None
              ) -> tuple[dict[str, Any] | None, str | None]:
    """(the split of one run, None) or (None, why there is none). `release` overrides the run's own."""
    if results.input not in SHA_COLUMN:
        return None, f"no split for input {results.input} (its clips are not rows of the default config)"
    source = release or results.settings.get("release")
    split = results.settings.get("split") or "test"
    if not source:
        return None, "the run names no release (give it with --release)"
    try:  # a folder that is not there is said at once, never looked up on the Hub
        target, _ = locate_release(source, results.settings.get("revision"))
    except WorkbenchError as exc:
        return None, f"{exc} (give the release with --release)"
    try:
        factors = release_factors(target, split, results.settings.get("revision"))
    except Exception as exc:  # datasets raises many types (not found, offline, bad files)
        return None, f"cannot read release {source} ({type(exc).__name__}: {exc}); give it with --release"
    column = SHA_COLUMN[results.input]
    wrong = [sid for sid, r in results.records.items()
             if sid not in factors or (r.get("audio_sha256") and factors[sid].get(column) != r["audio_sha256"])]
    if wrong:
        return None, (f"{len(wrong)} answer(s) are not of release {source} (id or audio hash differs, e.g. "
                      f"{wrong[0]}): no split from another export's metadata")
    from evaluation.paired import paired_factors

    return {"release": source, **factor_split(results.records, verdicts, results.input, factors),
            "paired": paired_factors(results.records, verdicts, factors)}, None


def format_splits(runs: list[dict[str, Any]]) -> str:
    """One block per run that has a split: factor, value, then the run's refusal cell."""
    lines: list[str] = []
    for r in runs:
        split = r.get("split_by_factor")
        if split is None:
            if r.get("split_note"):
                lines += ["", *note(f"refusal by voice, style, SNR and placement, {r['run']}: {r['split_note']}")]
            continue
        lines += ["", *note(f"refusal by voice, style, SNR and placement, {r['run']} ({r['judge']}), UNPAIRED (each "
                            "value over different lines, scenes and SNRs; a paired reading follows where lines have "
                            "variants): refused/judged [95% CI, cluster bootstrap over script families]")]
        width = max(len(v) for f in FACTORS for v in split[f]) + 2
        for factor in FACTORS:
            for value, c in split[factor].items():
                lines.append(f"  {factor:<15}{value:<{width}}{show_rate(c)}")
    return "\n".join(lines)
