"""The CosyVoice prompt bank: the voices CosyVoice clones, each a short wav and its exact transcript.

A bank is a YAML or CSV file (see load_prompt_bank) read when the synthesize stage builds its voice
bank, long before any model is reached, so its checks (a readable wav CosyVoice accepts, a clean
transcript, gender and accent for balancing) live here, apart from the backends
(construction.speech.cosyvoice).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import soundfile as sf
import yaml

from construction.core.errors import WorkbenchError
from construction.core.yamlfile import load_yaml
from construction.speech.cosyvoice_prompts import END_OF_PROMPT
from construction.speech.voices import Voice

BACKEND_NAME = "cosyvoice"

# CosyVoice's frontend refuses prompts over 30 s and resamples prompts to 16 kHz (min 16 kHz).
PROMPT_MIN_SAMPLE_RATE = 16000
PROMPT_MAX_DURATION_S = 30.0

PROMPT_FIELDS = ("voice_id", "wav", "transcript", "gender", "accent", "licence")
_VOICE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ACCENT_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$")  # BCP 47 shape, as in construction.speech.voices


@dataclass(frozen=True)
class CosyVoicePrompt:
    """One reference prompt: the voice to clone and the exact words spoken in it."""

    voice_id: str
    wav_path: Path
    transcript: str
    gender: str
    accent: str
    licence: str
    sample_rate: int
    duration_s: float



def load_prompt_bank(path: str | Path) -> list[CosyVoicePrompt]:
    """Read and validate a prompt bank (.yaml/.yml or .csv); wav paths are relative to the bank file.

    YAML: a mapping with key `prompts`, a list of mappings with exactly the keys
    voice_id, wav, transcript, gender, accent, licence. CSV: a header row with those columns.
    """
    bank = Path(path)
    if not bank.is_file():
        raise WorkbenchError(f"CosyVoice prompt bank {bank} does not exist")
    if bank.suffix.lower() in (".yaml", ".yml"):
        rows = _read_yaml_rows(bank)
    elif bank.suffix.lower() == ".csv":
        rows = _read_csv_rows(bank)
    else:
        raise WorkbenchError(f"CosyVoice prompt bank {bank}: unknown format (use .yaml, .yml or .csv)")
    if not rows:
        raise WorkbenchError(f"CosyVoice prompt bank {bank} has no prompts")

    prompts: list[CosyVoicePrompt] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        prompt = _validate_row(bank, index, row)
        if prompt.voice_id in seen:
            raise WorkbenchError(f"CosyVoice prompt bank {bank}: voice_id {prompt.voice_id!r} appears twice")
        seen.add(prompt.voice_id)
        prompts.append(prompt)
    return prompts


def prompt_voices(prompts: Iterable[CosyVoicePrompt]) -> list[Voice]:
    """The `Voice` records for a prompt bank (backend "cosyvoice", name = prompt voice_id)."""
    return [
        Voice(
            voice_id=f"{BACKEND_NAME}:{p.voice_id}",
            backend=BACKEND_NAME,
            gender=p.gender,
            accent=p.accent,
            licence=p.licence,
            name=p.voice_id,
        )
        for p in prompts
    ]


def _read_yaml_rows(bank: Path) -> list[Any]:
    try:
        data = load_yaml(bank.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise WorkbenchError(f"CosyVoice prompt bank {bank} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or set(data) != {"prompts"} or not isinstance(data["prompts"], list):
        raise WorkbenchError(f"CosyVoice prompt bank {bank}: expected a mapping with one key 'prompts' holding a list")
    return data["prompts"]


def _read_csv_rows(bank: Path) -> list[Any]:
    with bank.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or sorted(reader.fieldnames) != sorted(PROMPT_FIELDS):
            raise WorkbenchError(
                f"CosyVoice prompt bank {bank}: CSV header must be exactly {', '.join(PROMPT_FIELDS)} "
                f"(got {reader.fieldnames})"
            )
        return list(reader)


def _validate_row(bank: Path, index: int, row: Any) -> CosyVoicePrompt:
    where = f"CosyVoice prompt bank {bank}, entry {index + 1}"
    if not isinstance(row, dict):
        raise WorkbenchError(f"{where}: expected a mapping, got {type(row).__name__}")
    voice_id = str(row.get("voice_id") or "").strip()
    if voice_id:
        where = f"{where} ({voice_id})"
    unknown = sorted(set(row) - set(PROMPT_FIELDS))
    missing = [f for f in PROMPT_FIELDS if row.get(f) is None or not str(row.get(f)).strip()]
    if unknown:
        raise WorkbenchError(f"{where}: unknown keys {unknown} (allowed: {', '.join(PROMPT_FIELDS)})")
    if missing:
        raise WorkbenchError(f"{where}: missing or empty {', '.join(missing)}")
    if not _VOICE_ID_RE.match(voice_id):
        raise WorkbenchError(f"{where}: voice_id may hold only letters, digits, '_', '.', '-'")
    transcript = " ".join(str(row["transcript"]).split())
    if END_OF_PROMPT in transcript or "<|" in transcript:
        # The version-specific prefix is added by this module; a bank entry must hold only the spoken words.
        raise WorkbenchError(f"{where}: transcript must be only the words spoken in the wav, without '<|...|>' tokens")

    gender = str(row["gender"]).strip().lower()
    if gender not in ("female", "male"):
        raise WorkbenchError(f"{where}: gender must be 'female' or 'male', got {row['gender']!r}")
    accent = str(row["accent"]).strip()
    if not _ACCENT_RE.match(accent):
        raise WorkbenchError(f"{where}: accent must be a BCP 47 tag such as en-US or en-GB, got {accent!r}")

    wav = Path(str(row["wav"]).strip())
    wav = wav if wav.is_absolute() else bank.parent / wav
    if not wav.is_file():
        raise WorkbenchError(f"{where}: prompt wav {wav} does not exist")
    try:
        info = sf.info(str(wav))
    except (RuntimeError, sf.LibsndfileError) as exc:
        raise WorkbenchError(f"{where}: prompt wav {wav} is not a readable audio file: {exc}") from exc
    duration_s = info.frames / info.samplerate if info.samplerate else 0.0
    if info.samplerate < PROMPT_MIN_SAMPLE_RATE:
        raise WorkbenchError(
            f"{where}: prompt wav {wav} is {info.samplerate} Hz; CosyVoice needs >= {PROMPT_MIN_SAMPLE_RATE} Hz"
        )
    if info.frames == 0:
        raise WorkbenchError(f"{where}: prompt wav {wav} is empty")
    if duration_s > PROMPT_MAX_DURATION_S:
        raise WorkbenchError(
            f"{where}: prompt wav {wav} is {duration_s:.1f} s; CosyVoice accepts at most {PROMPT_MAX_DURATION_S:.0f} s"
        )
    return CosyVoicePrompt(
        voice_id=voice_id,
        wav_path=wav.resolve(),
        transcript=transcript,
        gender=gender,
        accent=accent,
        licence=str(row["licence"]).strip(),
        sample_rate=int(info.samplerate),
        duration_s=float(duration_s),
    )
