"""ATTRIBUTION.md: every background clip and voice of the released audio, with its source and licence.

Apart from release.card: it is read from the samples themselves (the controls' clips too), not from the
rows and agreement report the card is built from.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from construction.core.record import Sample
from release.markdown import cell


def attribution(samples: list[Sample], release_licence: str) -> str:
    """Every background clip and voice of the released audio: the samples and their controls (ids ctl-)."""
    clips: dict[str, dict[str, Any]] = {}
    for s in samples:
        for sound in (s.mix.sounds if s.mix else []):
            clip = clips.setdefault(sound.clip_id, {"sound": sound, "samples": 0, "controls": 0})
            clip["controls" if _is_control(s) else "samples"] += 1
    voices: dict[str, Counter] = {}
    for s in samples:
        if _is_control(s):
            continue  # a control repeats its sample's speech: same voice
        synth = s.provenance.get("synthesize", {})
        voices.setdefault(s.voice_id or "unknown", Counter())[
            (str(synth.get("backend", "")), str(synth.get("voice_licence", "")))] += 1
    lines = ["# Attribution", "",
             f"This release is licensed {release_licence}. Each clip mixes synthetic speech over a background "
             "sound; the mixtures are derived works of these background recordings, used under the licences "
             "below. Every licence listed is compatible with the release licence. The `controls` column counts "
             "the clips of the `controls` config (the same speech over a scene of another category).", "",
             f"## Background sounds ({len(clips)} clips)", "",
             "| clip | licence | attribution | source | tags | samples | controls |", "|---|---|---|---|---|---|---|"]
    for clip_id in sorted(clips):
        sound = clips[clip_id]["sound"]
        lines.append(f"| {cell(clip_id)} | {cell(sound.licence)} | {cell(sound.attribution)} | "
                     f"{cell(sound.source_url) or '-'} | {cell(', '.join(sound.clip_tags))} | "
                     f"{clips[clip_id]['samples']} | {clips[clip_id]['controls']} |")
    lines += ["", f"## Voices ({len(voices)})", "", "| voice | TTS backend | voice licence | samples |",
              "|---|---|---|---|"]
    for voice in sorted(voices):
        for (backend, licence), n in sorted(voices[voice].items()):
            lines.append(f"| {cell(voice)} | {cell(backend) or '-'} | {cell(licence) or '-'} | {n} |")
    return "\n".join(lines) + "\n"


def _is_control(s: Sample) -> bool:
    return "control_of" in s.custom
