"""The voice factors of a release row, as the audio carries them (issue 51).

`line_id` groups the variants of one line (construction.speech.variants): the same words over the same
scene in another voice; `variant` names the cell (female-us-fast). A build without variants makes each
sample its own line with one variant, named from what was rendered (female-us-1.05x). `speaking_rate` is
the speed factor the TTS was given; `emotion` is what was asked (the variant's emotion, or a plain build's
script style), and `emotion_rendered` whether the engine spoke it (only CosyVoice's instruct mode does).
`speaker_style` shows a style only where it was rendered: an offline voice's is shown as the rate it
produced ("rate 1.05x"), never as "angry".
"""

from __future__ import annotations

from typing import Any

from construction.core.record import Sample, line_of

COLUMNS = ("line_id", "variant", "voice_gender", "voice_accent", "speaking_rate", "emotion", "emotion_rendered")


def features(text, number, boolean) -> dict[str, Any]:
    """The HF features of the voice columns (`voice_gender` and `voice_accent` sit with the voice's)."""
    return {"line_id": text, "variant": text, "speaking_rate": number, "emotion": text, "emotion_rendered": boolean}


def rate_of(sample: Sample) -> float | None:
    speed = sample.provenance.get("synthesize", {}).get("speed")
    return None if speed is None else float(speed)


def shown_style(sample: Sample) -> str:
    """The script's style where the voice rendered it, else the rate the voice spoke at."""
    synth = sample.provenance.get("synthesize", {})
    if synth.get("style_rendered"):
        return synth.get("style_requested") or sample.speaker_style
    rate = rate_of(sample)
    return "" if rate is None else f"rate {rate:g}x"


def columns(sample: Sample) -> dict[str, Any]:
    """line_id, variant, speaking_rate, emotion, emotion_rendered (the gender and accent are the voice's)."""
    synth = sample.provenance.get("synthesize", {})
    variant = sample.custom.get("variant")
    if variant:
        name = variant["name"]
    else:
        accent = (synth.get("accent") or "unknown").lower().removeprefix("en-")
        rate = rate_of(sample)
        name = f"{synth.get('gender') or 'unknown'}-{accent}-{'unknown' if rate is None else f'{rate:g}x'}"
    return {"line_id": line_of(sample), "variant": name, "speaking_rate": rate_of(sample),
            "emotion": synth.get("style_requested", variant["emotion"] if variant else "") or "",
            "emotion_rendered": bool(synth.get("style_rendered"))}
