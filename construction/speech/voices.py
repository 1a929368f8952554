"""The voice catalogue: every offline voice by a stable id, and the default banks drawn from it.

Configs (synthesize.voices), manifests and the release name a voice by its id ("<backend>:<name>"), so
the catalogue is kept apart from the engines that speak it (construction.speech.tts): checking a voice
bank needs no TTS engine loaded. CosyVoice voices are not listed here; they come
from a prompt bank (construction.speech.cosyvoice_bank).
"""
from __future__ import annotations

from dataclasses import dataclass

from construction.core.errors import WorkbenchError


@dataclass(frozen=True)
class Voice:
    voice_id: str  # stable, "<backend>:<name>"
    backend: str  # "piper" | "kokoro" | "hibari" | "flite" | "espeak"
    gender: str  # "female" | "male"
    accent: str  # BCP 47 tag: "en-US", "en-GB", "en-GB-scotland"
    licence: str  # licence of the voice data
    name: str  # engine-specific voice name


KOKORO_LICENCE = "Apache-2.0 (Kokoro-82M weights and voices; ONNX export MIT)"
# Kokoro's English voices: prefix a/b = American/British, then f/m = female/male.
_KOKORO_NAMES = (
    "af_alloy", "af_aoede", "af_bella", "af_heart", "af_jessica", "af_kore", "af_nicole", "af_nova", "af_river",
    "af_sarah", "af_sky", "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx",
    "am_puck", "am_santa", "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george",
    "bm_lewis",
)


def _kokoro_voice(name: str) -> Voice:
    return Voice(
        voice_id=f"kokoro:{name}",
        backend="kokoro",
        gender="female" if name[1] == "f" else "male",
        accent="en-GB" if name[0] == "b" else "en-US",
        licence=KOKORO_LICENCE,
        name=name,
    )


_FLITE_LICENCE = "CMU Flite licence (BSD-style; CMU ARCTIC voice data)"
_ESPEAK_LICENCE = "GPL-3.0-or-later (espeak-ng, run as a separate program)"

# Every voice known to run offline here. The default bank is a subset (see offline_voice_bank).
CATALOGUE: tuple[Voice, ...] = (
    *(_kokoro_voice(n) for n in _KOKORO_NAMES),
    Voice("piper:en_US-joe-medium", "piper", "male", "en-US",
          "CC0-1.0 (voice data; fine-tuned from piper's lessac voice)", "en_US-joe-medium"),
    Voice("hibari:heart", "hibari", "female", "en-US", "Apache-2.0", "heart"),
    Voice("flite:slt", "flite", "female", "en-US", _FLITE_LICENCE, "slt"),
    Voice("flite:rms", "flite", "male", "en-US", _FLITE_LICENCE, "rms"),
    Voice("flite:awb", "flite", "male", "en-GB-scotland", _FLITE_LICENCE, "awb"),
    Voice("flite:kal16", "flite", "male", "en-US", _FLITE_LICENCE, "kal16"),
    Voice("espeak:en-us", "espeak", "male", "en-US", _ESPEAK_LICENCE, "en-us"),
    Voice("espeak:en-us+f3", "espeak", "female", "en-US", _ESPEAK_LICENCE, "en-us+f3"),
    Voice("espeak:en-gb", "espeak", "male", "en-GB", _ESPEAK_LICENCE, "en-gb"),
    Voice("espeak:en-gb+f3", "espeak", "female", "en-GB", _ESPEAK_LICENCE, "en-gb+f3"),
)
_BY_ID = {v.voice_id: v for v in CATALOGUE}

# The default bank: three female and three male voices, US, US and UK each. Until
# round 9 of issue 33 flite voiced three of the six places, chosen so that 3,000 samples built in under 30
# min on a 2-core CPU; that criterion was withdrawn, and flite's voices were the build's weakest: the WER
# gate (mixture and both twins heard) kept 24-57 % of their first attempts against 58-89 % of the others',
# so with 2 re-mixes a flite bank spent 1.65 syntheses per kept sample and kept 536 of 600 scripts, this
# bank 1.27 and 573 (1.25 and 574 with 3 re-mixes, the default; perf/results/issue33-bank-round9-600.txt).
# Kokoro (real-time factor ~0.65 on one core against flite's 0.02) makes the build about 1.6x as long.
# FAST_BANK_IDS is that flite bank (configs/voices-fast.yaml). KOKORO_BANK_IDS is the richer bank
# (configs/voices-kokoro.yaml): twelve voices, seven of them Kokoro. hibari "heart" is a distillation of
# Kokoro af_heart.
DEFAULT_BANK_IDS: tuple[str, ...] = (
    "hibari:heart", "kokoro:af_bella", "kokoro:bf_emma",  # female: US, US, UK
    "piper:en_US-joe-medium", "kokoro:am_michael", "kokoro:bm_george",  # male: US, US, UK
)
FAST_BANK_IDS: tuple[str, ...] = (
    "hibari:heart", "flite:slt", "kokoro:bf_emma",  # female: US, US, UK
    "piper:en_US-joe-medium", "flite:rms", "flite:awb",  # male: US, US, UK (awb: Scottish)
)
KOKORO_BANK_IDS: tuple[str, ...] = (
    "kokoro:af_bella", "kokoro:af_kore", "hibari:heart", "flite:slt",  # female, US
    "kokoro:bf_emma", "kokoro:bf_isabella",  # female, UK
    "kokoro:am_michael", "piper:en_US-joe-medium", "flite:rms",  # male, US
    "kokoro:bm_george", "kokoro:bm_fable", "flite:awb",  # male, UK (awb: Scottish)
)


def offline_voice_bank() -> list[Voice]:
    """The default voice bank: voices that run offline on this CPU, female and male, US and UK."""
    return [_BY_ID[i] for i in DEFAULT_BANK_IDS]


def voice_by_id(voice_id: str) -> Voice:
    """The catalogue voice with this id; WorkbenchError naming the id when there is none."""
    try:
        return _BY_ID[voice_id]
    except KeyError:
        raise WorkbenchError(f"unknown voice {voice_id!r}; known voices: {', '.join(sorted(_BY_ID))}") from None
