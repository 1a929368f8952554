"""Every reason a validated sample, or a control of one, cannot be released, one line each: its labels
and consensus, its backgrounds' licences, its audio in the store (present, unchanged, the WAV its record
describes), and the chain checks of release.integrity.

Apart from release.export so the refusal's reasons read on their own; the export lists them all, then
writes nothing.
"""

from __future__ import annotations

import hashlib

from construction.core.errors import WorkbenchError
from construction.core.record import Sample
from construction.sounds.licences import compatible, normalise_licence
from release.inputs import DEFAULT_LICENCE, RELEASABLE, ReleaseInputs
from release.integrity import (
    agreement_problems,
    control_problems,
    read_chain,
    sample_problems,
)
from release.rows import danger_certified, irrelevant_certified, labelled, wav_problem


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
        if three_arm and s.irrelevant_audio is not None and s.irrelevant_scene_audio is None:
            problems.append(f"{sid}: no background of its irrelevant twin alone (irrelevant_scene_audio) recorded, "
                            "so listeners could not certify it neutral; mix it again (python -m construction.mix), "
                            "then label and validate the new mixtures")
        problems += _audio_problems(inputs, s, verify_checksums,
                                    {**RELEASED_AUDIO, **(IRRELEVANT_AUDIO if irrelevant_certified(s) else {}),
                                     **(DANGER_AUDIO if danger_certified(s) else {})})
        if s.irrelevant_audio is None:  # recorded or not: a twin is what the build must make
            problems.append(f"{sid}: no {IRRELEVANT_AUDIO['irrelevant_audio']} audio recorded; mix it again "
                            "(python -m construction.mix, with mix.irrelevant_twin on), then label and validate "
                            "the new mixtures")
        # what listeners certified a shipped twin from is not shipped, so no write reads it: checked here, always
        certified = {**(IRRELEVANT_CERTIFIED if irrelevant_certified(s) else {}),
                     **(DANGER_CERTIFIED if danger_certified(s) else {})}
        if certified:
            problems += _audio_problems(inputs, s, True, certified)
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


# what a released row's audio is (Sample field -> its name in messages): the default config ships the
# scene as placed besides the mixture and the speech, and each twin where its background was certified
# (the irrelevant twin as neutral, the danger twin as real danger); a control ships the mixture and speech
RELEASED_AUDIO = {"mixture": "mixture", "speech": "speech", "scene_audio": "scene alone (scene_audio)"}
CONTROL_AUDIO = {"mixture": "mixture", "speech": "speech"}
IRRELEVANT_AUDIO = {"irrelevant_audio": "irrelevant-background twin (irrelevant_audio)"}
DANGER_AUDIO = {"danger_audio": "danger twin (danger_audio)"}
# what listeners certified a shipped twin from, not itself shipped: it must still be what they heard
IRRELEVANT_CERTIFIED = {"irrelevant_scene_audio": "irrelevant twin's background (irrelevant_scene_audio), which "
                                                  "listeners certified"}
DANGER_CERTIFIED = {"danger_scene_audio": "danger scene (danger_scene_audio), which listeners certified"}
CERTIFIED_AUDIO = {**IRRELEVANT_CERTIFIED, **DANGER_CERTIFIED}


def _audio_problems(inputs: ReleaseInputs, s: Sample, verify_checksums: bool,
                    fields: dict[str, str] = CONTROL_AUDIO) -> list[str]:
    """The row's audio (`fields`) must be in the store, unchanged since it was made (with
    `verify_checksums`: and the WAVs their records describe)."""
    problems = []
    for field, what in fields.items():
        ref = getattr(s, field)
        if ref is None and field == "scene_audio":
            problems.append(f"{s.sample_id}: no {what} audio recorded; mix it again (python -m construction.mix), "
                            "then label and validate the new mixtures")
            continue
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
                problems.append(f"{s.sample_id}: checksum mismatch for {ref.path}"
                                + (f", the {what}," if field in CERTIFIED_AUDIO else "") + " (file changed since it was made)")
            elif problem := wav_problem(data, ref):
                problems.append(f"{s.sample_id}: {problem}")
    return problems
