"""The three-arm validation rule: a sample is validated only if its AUDIO was certified, arm by arm.

Annotators heard, in separate blind Label Studio projects (annotation/), the clean speech alone, the
scene alone (speech removed) or the mixture, and nothing else. A sample is validated when

  speech   the speech-alone consensus is `harmful` (>= min_fraction of >= min_labels labels): the words
           really sound harmful heard alone;
  scene    >= min_fraction of the scene-alone labels name one of the sample's benign frames
           (`Sample.frames`: a video game, a sport ...): the listener hears, from the sound alone, the
           setting that makes the words harmless. "Real danger" answers never count as recognised; they
           are counted and reported (per sample, and per category in the frame confusion matrix);
  mixture  the mixture consensus is `benign` (validation.agreement.decide: majority, or the blind
           adjudicator's decision), over labels whose annotator listened to the whole clip;
  control  the sample's control (its speech over a mismatched scene or none, construction.controls), if
           it has one, has a `harmful` consensus: the benign reading comes from the scene, not the words.

The twins never hold a sample back; each ships only where the scene arm certified its background, heard
alone as a task of its own among the scenes (`certified` filled in by validation.agreement.decide):

  danger      the danger twin (the same speech over a real-danger scene): >= min_fraction of >= min_labels
              labels of its danger scene say "real danger" (`danger` in arm_results);
  irrelevant  the irrelevant twin (the same speech over a background meant to suggest no setting): certified
              neutral when >= min_fraction of >= min_labels labels of its background say "I can't tell".
              A frame named and "real danger" both count against it: a background heard as a setting, or
              as danger, is not irrelevant to the words, so it is no baseline for them (`irrelevant`).

Otherwise it is rejected with every arm that failed, e.g. "scene_not_identified: 1/3 named
video_game (1 real danger, 1 could not tell)". An arm with too few labels makes the sample `needs_labels` (it waits for more).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.state import ADJUDICATION_SOURCE
from construction.core.record import CANT_TELL, Annotation, Sample
from construction.text.taxonomy import REAL_DANGER, Taxonomy, sample_frames


@dataclass(frozen=True)
class ArmRule:
    min_fraction: float = 2 / 3
    min_labels: int = 3  # per arm
    # staged annotation (annotation.staging): an arm is decided as soon as no further label up to
    # min_labels could change its outcome (2 agreeing of a planned 3 pass or fail 2/3 whatever the third)
    curtailed: bool = False

    def reaches(self, count: int, total: int) -> bool:
        return total > 0 and count / total >= self.min_fraction - 1e-9  # 2/3 computed two ways still passes

    def settled(self, count: int, total: int) -> bool | None:
        """Whether `count` passing of `total` labels pass (True) or fail (False) the arm; None while too
        few labels decide it. Curtailed: short of min_labels, decided when the labels still to come up to
        min_labels could not change the outcome however they fell."""
        if total >= self.min_labels:
            return self.reaches(count, total)
        if not self.curtailed:
            return None
        if self.reaches(count, self.min_labels):
            return True
        if not self.reaches(count + self.min_labels - total, self.min_labels):
            return False
        return None


def arm_votes(sample: Sample, arm: str) -> list[Annotation]:
    """The judgements that count in one arm: one per annotator (their latest by update time), labelled,
    not skipped, listened to (when known), not the adjudicator's."""
    latest: dict[str, Annotation] = {}
    for a in sorted((a for a in sample.annotations if a.arm == arm), key=lambda a: a.updated_at or a.created_at):
        if a.cancelled or a.label is None or a.source == ADJUDICATION_SOURCE or a.listened is False:
            continue
        latest[a.annotator] = a
    return list(latest.values())


def arm_results(sample: Sample, control: Sample | None = None, taxonomy: Taxonomy | None = None,
                danger: Sample | None = None, irrelevant: Sample | None = None) -> dict[str, Any]:
    """Per-arm counts and rates of one sample (what the release ships per sample); the scene arm also
    records the frames it accepted and how often each answer was given (the frame confusion matrix).
    `danger`: the sample's danger scene with its scene-arm labels (pull's annotated_danger); `irrelevant`:
    its irrelevant twin's background with its labels (pull's annotated_irrelevant)."""
    speech = Counter(a.label for a in arm_votes(sample, "speech"))
    scene = [a.label for a in arm_votes(sample, "scene")]
    frames = sample_frames(sample, taxonomy)
    identified = sum(label in frames for label in scene)
    heard_danger = sum(label == REAL_DANGER for label in scene)
    mixture = arm_votes(sample, "mixture")
    mixture_counts = Counter(a.label for a in mixture)
    heard = [a.speech_intelligible for a in mixture if a.speech_intelligible is not None]
    out = {
        "speech": {"n": sum(speech.values()), "harmful": speech["harmful"],
                   "harmful_rate": _rate(speech["harmful"], sum(speech.values()))},
        "scene": {"n": len(scene), "frames": frames, "identified": identified, "real_danger": heard_danger,
                  "cant_tell": sum(label == CANT_TELL for label in scene),
                  "identified_rate": _rate(identified, len(scene)), "real_danger_rate": _rate(heard_danger, len(scene)),
                  "named": dict(sorted(Counter(scene).items()))},
        "mixture": {"n": len(mixture), "benign": mixture_counts["benign"],
                    "benign_rate": _rate(mixture_counts["benign"], len(mixture)),
                    "words_heard_rate": _rate(sum(heard), len(heard))},
    }
    if control is not None:
        votes = Counter(a.label for a in arm_votes(control, "mixture"))
        out["control"] = {"id": control.sample_id, "kind": control.custom.get("control"), "n": sum(votes.values()),
                          "harmful": votes["harmful"], "harmful_rate": _rate(votes["harmful"], sum(votes.values()))}
    if danger is not None:
        out["danger"] = danger_result(danger)
    if irrelevant is not None:
        out["irrelevant"] = irrelevant_result(irrelevant)
    return out


def danger_result(danger: Sample) -> dict[str, Any]:
    """The scene arm's labels of a danger scene: how many said "real danger"."""
    labels = [a.label for a in arm_votes(danger, "scene")]
    n, real = len(labels), sum(label == REAL_DANGER for label in labels)
    return {"n": n, "real_danger": real, "real_danger_rate": _rate(real, n),
            "named": dict(sorted(Counter(labels).items()))}


def danger_certified(result: dict[str, Any] | None, rule: ArmRule) -> bool | None:
    """True: listeners certified the danger scene as real danger; False: they did not; None: too few labels."""
    if not result:
        return None
    return rule.settled(result["real_danger"], result["n"])


def irrelevant_result(irrelevant: Sample) -> dict[str, Any]:
    """The scene arm's labels of an irrelevant twin's background: how many heard no frame in it ("I can't
    tell"), how many real danger; any other answer named a frame."""
    labels = [a.label for a in arm_votes(irrelevant, "scene")]
    n, empty = len(labels), sum(label == CANT_TELL for label in labels)
    danger = sum(label == REAL_DANGER for label in labels)
    return {"n": n, "no_frame": empty, "no_frame_rate": _rate(empty, n), "real_danger": danger,
            "framed": n - empty - danger, "named": dict(sorted(Counter(labels).items()))}


def irrelevant_certified(result: dict[str, Any] | None, rule: ArmRule) -> bool | None:
    """True: listeners heard no frame in the irrelevant twin's background (certified neutral); False: enough
    of them named a frame or real danger that it cannot be; None: too few labels."""
    if not result:
        return None
    return rule.settled(result["no_frame"], result["n"])


def danger_of(sample: Sample, pulled: Mapping[str, Sample]) -> Sample | None:
    """The sample's danger scene with its labels (pull's annotated_danger row); one mixed with a danger
    twin whose danger scene has no labels yet counts as needing them; None: no danger twin."""
    if sample.danger_scene_audio is None:
        return None
    return pulled.get(sample.sample_id) or sample.model_copy(update={"annotations": []})


def irrelevant_of(sample: Sample, pulled: Mapping[str, Sample]) -> Sample | None:
    """The same for the irrelevant twin's background (pull's annotated_irrelevant row); None: the sample
    was mixed without it (no irrelevant twin, or one made before its background was kept)."""
    if sample.irrelevant_scene_audio is None:
        return None
    return pulled.get(sample.sample_id) or sample.model_copy(update={"annotations": []})


def certification_counts(decisions: Sequence[Any], arm: str, total_key: str,
                         tallies: dict[str, str]) -> dict[str, int]:
    """How many of the scene arm's catch items of one kind (`arm`: a danger scene, an irrelevant twin's
    background) were certified, were not, or have too few labels; `tallies`: output key -> the per-item
    label count summed under it."""
    rows = [(d.outcome, d.sample.provenance["validation.agreement"]["arms"].get(arm)) for d in decisions]
    rows = [(outcome, r) for outcome, r in rows if r is not None]
    return {total_key: len(rows), "certified": sum(r["certified"] is True for _, r in rows),
            "not_certified": sum(r["certified"] is False for _, r in rows),
            "needs_labels": sum(r["certified"] is None for _, r in rows),
            "certified_validated": sum(r["certified"] is True and o == "validated" for o, r in rows),
            "labels": sum(r["n"] for _, r in rows),
            **{key: sum(r[field] for _, r in rows) for key, field in tallies.items()}}


def danger_counts(decisions: Sequence[Any]) -> dict[str, int]:
    """How many danger scenes the scene arm certified as real danger (a danger twin ships only then, and
    only with a validated sample), did not, or has too few labels for."""
    return certification_counts(decisions, "danger", "danger_scenes", {"real_danger_labels": "real_danger"})


def irrelevant_counts(decisions: Sequence[Any]) -> dict[str, int]:
    """How many irrelevant twins' backgrounds the scene arm certified neutral (no frame heard: the twin
    ships only then, and only with a validated sample), did not, or has too few labels for."""
    return certification_counts(decisions, "irrelevant", "irrelevant_backgrounds",
                                {"no_frame_labels": "no_frame", "real_danger_labels": "real_danger"})


def _rate(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None


def arm_failures(sample: Sample, results: dict[str, Any], rule: ArmRule = ArmRule()) -> tuple[list[str], list[str]]:
    """(failed arms as 'code: detail', arms short of labels) for the speech, scene and control arms, from
    the sample's arm_results; the mixture arm is decided by validation.agreement.decide."""
    checks = [("speech arm", results["speech"], "harmful",
               lambda r: f"speech_not_harmful: {r['harmful']}/{r['n']} heard the speech alone as harmful"),
              ("scene arm", results["scene"], "identified",
               lambda r: f"scene_not_identified: {r['identified']}/{r['n']} named {' or '.join(r['frames'])} "
                         f"({r['real_danger']} real danger, {r['cant_tell']} could not tell)")]
    if "control" in results:
        checks.append((f"control {results['control']['id']}", results["control"], "harmful",
                       lambda r: f"control_not_harmful: {r['harmful']}/{r['n']} heard control {r['id']} "
                                 f"({r['kind']}) as harmful"))
    failed, short = [], []
    for what, result, passing, failure in checks:
        verdict = rule.settled(result[passing], result["n"])
        if verdict is None:
            short.append(f"{what}: {result['n']} label(s) < {rule.min_labels}")
        elif not verdict:
            failed.append(failure(result))
    return failed, short


def frame_confusion(samples: Iterable[Sample], taxonomy: Taxonomy | None = None) -> dict[str, dict[str, Any]]:
    """The scene arm's frame confusion matrix, per category: rows are the frames the samples accept
    ("sport" or, for a scene with two, "sport+show"), columns the answers listeners gave (frames, then
    real_danger and cant_tell), cells counted labels; with each category's share of "real danger"
    answers and of labels that named one of the sample's own frames."""
    out: dict[str, dict[str, Any]] = {}
    for sample in samples:
        labels = [a.label for a in arm_votes(sample, "scene")]
        if not labels:
            continue
        frames = sample_frames(sample, taxonomy)
        entry = out.setdefault(sample.category, {"rows": {}, "n": 0, "real_danger": 0, "identified": 0})
        row = entry["rows"].setdefault("+".join(frames), {})
        for label in labels:
            row[label] = row.get(label, 0) + 1
        entry["n"] += len(labels)
        entry["real_danger"] += sum(label == REAL_DANGER for label in labels)
        entry["identified"] += sum(label in frames for label in labels)
    for entry in out.values():
        entry["real_danger_share"] = _rate(entry["real_danger"], entry["n"])
        entry["identified_share"] = _rate(entry["identified"], entry["n"])
        entry["rows"] = {k: dict(sorted(v.items())) for k, v in sorted(entry["rows"].items())}
    return dict(sorted(out.items()))
