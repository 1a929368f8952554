"""A release ships only what validation decided: each validated row and control is traced back through the
workspace's own chain before anything is written.

  audio     the speech is the file synthesis made, and the mixture, the scene as placed, the twins and
            their backgrounds alone (which the scene arm certified) the ones mixing made: every manifest
            from that stage on carries the same sha256 (a twin ships only where validation certified its
            background: the irrelevant twin's as neutral, the danger twin's as real danger);
  labels    the category is in the taxonomy, and every label in its arm's set (mixture: the agreement
            report's labels; speech: SPEECH_LABELS; scene: the taxonomy's frames, the sample's own,
            real_danger or cant_tell);
  decision  a row validation rejected (validated.rejected) is refused, and validation.agreement.decide,
            rerun on the sample's 'annotated' row (with its control, its danger scene's and irrelevant
            background's labels, under the workspace's rule and protocol), must validate it and give exactly
            the row (its twins' certification included);
  controls  each is the row construction.controls built (same audio, kind, sample), expects harmful, and
            a sample has at most one (validation judged only one);
  numbers   every number a row ships is finite and of a plausible size, and every alpha of the agreement
            report a number: the plots cannot bin inf or 1e308, the card would say
            "mean nan".

Apart from release.export so the checks read on their own; release.checks lists what they find with its own.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from annotation.state import ADJUDICATION_SOURCE
from construction.core.errors import WorkbenchError
from construction.core.record import SPEECH_LABELS, Sample
from construction.text.taxonomy import NOT_A_FRAME, Taxonomy, load_taxonomy, sample_frames
from release.inputs import CONTROLS_SOURCE, MANIFEST, ReleaseInputs
from validation.agreement import (
    DANGER_STAGE,
    DEFAULT_LABELS,
    IRRELEVANT_STAGE,
    ConsensusRule,
    danger_of,
    decide,
    irrelevant_of,
)

# no measure of a clip (dB, seconds, rates, WER) comes near it; beyond it a histogram has no finite bins
NUMBER_LIMIT = 1e6
# the stages that carry each audio, from the one that made it on
MADE_BY = {"speech": ("synthesize", "mix", "wer", "annotated"), "mixture": ("mix", "wer", "annotated"),
           "scene_audio": ("mix", "wer", "annotated"), "irrelevant_audio": ("mix", "wer", "annotated"),
           "danger_audio": ("mix", "wer", "annotated"), "irrelevant_scene_audio": ("mix", "wer", "annotated"),
           "danger_scene_audio": ("mix", "wer", "annotated")}
# the mix stage leaves them to the WER stage in the automatic build
TWINS = ("irrelevant_audio", "danger_audio", "irrelevant_scene_audio", "danger_scene_audio")


@dataclass
class Chain:
    """What the workspace's own stages recorded, read once for the whole release."""
    annotated: dict[str, Sample]
    danger: dict[str, Sample]  # annotated_danger: the danger scenes' labels, by sample id
    irrelevant: dict[str, Sample]  # annotated_irrelevant: the irrelevant twins' backgrounds' labels
    audio: dict[str, dict[str, dict[str, str | None]]]  # stage -> sample id -> {"speech": sha, "mixture": sha, ...}
    remade: set[str]  # samples whose speech and mixture the WER stage made again (re-synthesis)
    rejected: dict[str, str]  # validated.rejected: sample id -> reason
    built_controls: dict[str, Sample]
    controls_of: dict[str, list[Sample]]  # released sample id -> its controls
    rule: ConsensusRule
    protocol: str
    categories: list[str] | None  # the taxonomy's (None: it could not be read)
    taxonomy: Taxonomy | None = None  # the build's (None: it could not be read)


def read_chain(inputs: ReleaseInputs) -> Chain:
    ws = inputs.workspace
    audio: dict[str, dict[str, dict[str, str | None]]] = {}
    remade: set[str] = set()
    for stage in MADE_BY["speech"]:
        if ws.has_manifest(stage):
            rows = list(ws.read_samples(stage))
            audio[stage] = {s.sample_id: {what: ref.sha256 if (ref := getattr(s, what)) else None
                                          for what in MADE_BY} for s in rows}
            if stage == "wer":
                remade = {s.sample_id for s in rows if len(s.provenance.get("wer", {}).get("attempts", [])) > 1}
    try:
        taxonomy = load_taxonomy((inputs.config.get("generate") or {}).get("taxonomy"))[0]
    except WorkbenchError:
        taxonomy = None  # the taxonomy file moved: categories and scene answers go unchecked
    rejected = ({r.sample.sample_id: r.reason for r in ws.read_rejected(MANIFEST)}
                if ws.rejected_path(MANIFEST).exists() else {})
    built = {c.sample_id: c for c in ws.read_samples(CONTROLS_SOURCE)} if inputs.controls else {}
    controls_of: dict[str, list[Sample]] = {}
    for c in inputs.controls:
        controls_of.setdefault(str(c.custom.get("control_of")), []).append(c)
    danger, irrelevant = ({d.sample_id: d for d in ws.read_samples(stage)} if ws.has_manifest(stage) else {}
                          for stage in (DANGER_STAGE, IRRELEVANT_STAGE))
    return Chain({s.sample_id: s for s in ws.read_samples("annotated")}, danger, irrelevant, audio, remade, rejected,
                 built, controls_of, _rule(inputs), inputs.protocol,
                 None if taxonomy is None else [c.id for c in taxonomy.categories],
                 taxonomy)


def _rule(inputs: ReleaseInputs) -> ConsensusRule:
    """The rule validation ran: its stats (exact), else the one its rows record (6 decimals), and the
    agreement report's label set."""
    stats = inputs.workspace.read_stats(MANIFEST) or {}
    recorded = Counter((r.get("min_fraction"), r.get("min_labels")) for s in inputs.samples
                       if (r := (s.provenance.get("validation.agreement") or {}).get("rule")))
    fraction, labels = ((stats["rule"].get("min_fraction"), stats["rule"].get("min_labels")) if stats.get("rule")
                        else recorded.most_common(1)[0][0] if recorded else (None, None))
    default = ConsensusRule()
    fraction = default.min_fraction if fraction is None else float(fraction)
    simple = float(Fraction(fraction).limit_denominator(100))
    if round(simple, 6) == round(fraction, 6):
        fraction = simple  # 0.666667 was recorded for 2/3
    return ConsensusRule(min_fraction=fraction, min_labels=int(labels or default.min_labels),
                         labels=tuple(inputs.agreement.get("labels") or DEFAULT_LABELS),
                         curtailed=bool((stats.get("rule") or {}).get("curtailed")))  # pushed staged


def sample_problems(chain: Chain, s: Sample, decision: bool = True) -> list[str]:
    """Why a validated row is not what the workspace's chain and validation made (empty: it is). With
    `decision` False (the row already has a problem), validation's decision is not rerun."""
    sid = s.sample_id
    problems = _audio_problems(chain, s)
    if chain.categories is not None and s.category not in chain.categories:
        problems.append(f"{sid}: category {s.category!r} is not in the taxonomy")
    problems += _label_problems(chain, s)
    if sid in chain.rejected:
        problems.append(f"{sid}: validation rejected it ({chain.rejected[sid]}); a rejected row is never released")
    controls = chain.controls_of.get(sid, [])
    if len(controls) > 1:
        problems.append(f"{sid}: {len(controls)} controls ({', '.join(c.sample_id for c in controls)}); "
                        "construction.controls makes one per sample and validation judged one")
    if problems or not decision:
        return problems
    upstream = chain.annotated.get(sid)
    if upstream is None:
        return [f"{sid}: not in the 'annotated' manifest"]
    three_arm = chain.protocol == "three-arm"
    made = decide(upstream, chain.rule, controls[0] if controls else None, chain.protocol, chain.taxonomy,
                  danger_of(upstream, chain.danger) if three_arm else None,
                  irrelevant_of(upstream, chain.irrelevant) if three_arm else None)
    if made.outcome != "validated":
        return [f"{sid}: validation does not validate it from its labels ({made.outcome}: {made.reason}); "
                "the validated row was edited by hand, or is older than its labels (rerun python -m "
                "validation.agreement)"]
    differs = _differs(made.sample, s)
    if differs:
        return [f"{sid}: differs from what validation made of its 'annotated' row in {', '.join(differs)} (a "
                "hand-edited row? rerun python -m validation.agreement)"]
    return []


def control_problems(chain: Chain, c: Sample, decision: bool = True) -> list[str]:
    """Why a control cannot ship: it expects another label than harmful, has labels outside the set, or is
    not the row construction.controls built (with its labels added)."""
    problems = []
    if c.custom.get("expected", "harmful") != "harmful":
        problems.append(f"{c.sample_id}: control expects {c.custom.get('expected')!r}; a control expects harmful")
    problems += _label_problems(chain, c)
    built = chain.built_controls.get(c.sample_id)
    if not problems and decision and built is not None:
        differs = _differs(built, c, ignore=("annotations",))
        if differs:
            problems.append(f"{c.sample_id}: differs from the control construction.controls built in "
                            f"{', '.join(differs)} (a hand-edited row?)")
    return problems


def _audio_problems(chain: Chain, s: Sample) -> list[str]:
    problems = []
    for what, stages in MADE_BY.items():
        if s.sample_id in chain.remade:  # a re-synthesised sample's audio comes from the WER stage on
            stages = stages[stages.index("wer"):]
        ref = getattr(s, what)
        for stage in (st for st in stages if st in chain.audio and s.sample_id in chain.audio[st]):
            made = chain.audio[stage][s.sample_id][what]
            # the automatic build's mix stage leaves the twins to the WER stage: only there may one be missing;
            # a later stage without it is a hand edit (a twin of another sample would ship)
            if made is None and what in TWINS and stage == "mix":
                continue
            if ref is not None and made != ref.sha256:
                problems.append(f"{s.sample_id}: {what} audio {ref.sha256[:12]} is not the one in the '{stage}' "
                                f"manifest ({str(made)[:12]}): audio of another sample, or edited by hand")
                break
    return problems


def _label_problems(chain: Chain, s: Sample) -> list[str]:
    sets = {"mixture": chain.rule.labels, "speech": SPEECH_LABELS}
    if chain.taxonomy is not None:  # without the taxonomy the scene arm's answers cannot be checked
        sets["scene"] = (*(f.id for f in chain.taxonomy.frame_list), *sample_frames(s, chain.taxonomy), *NOT_A_FRAME)
    outside = sorted({f"{a.arm} label {a.label!r}" for a in s.annotations
                      if a.label is not None and not a.cancelled and a.source != ADJUDICATION_SOURCE
                      and a.arm in sets and a.label not in sets[a.arm]})
    return [f"{s.sample_id}: {', '.join(outside)} not in the arm's label set"] if outside else []


def _differs(expected: Sample, row: Sample, ignore: tuple[str, ...] = ()) -> list[str]:
    made, got = expected.model_dump(mode="json"), row.model_dump(mode="json")
    return [key for key in made if key not in ignore and made[key] != got.get(key)]


def number_problems(rows: list[dict]) -> list[str]:
    """Row numbers that are not finite (inf, nan) or not of a plausible size (1e308), one line per row."""
    problems = []
    for row in rows:
        bad = [f"{column} = {value!r}" for column, value in row.items()
               if isinstance(value, float) and not (math.isfinite(value) and abs(value) < NUMBER_LIMIT)]
        if bad:
            problems.append(f"{row['id']}: {', '.join(bad)}: not a finite number within ±{NUMBER_LIMIT:g}")
    return problems


def agreement_problems(agreement: dict) -> list[str]:
    """Alphas and intervals of reports/agreement.json that are not numbers: null (not computable) is fine."""
    entries = [("overall", agreement.get("overall"))]
    entries += [(f"per_category.{c}", e) for c, e in (agreement.get("per_category") or {}).items()]
    for arm, entry in (agreement.get("arms") or {}).items():
        entry = entry if isinstance(entry, dict) else {}
        entries.append((f"arms.{arm}.overall", entry.get("overall")))
        entries += [(f"arms.{arm}.per_category.{c}", e) for c, e in (entry.get("per_category") or {}).items()]
    problems = []
    for where, entry in entries:
        if entry is None:
            continue
        if not isinstance(entry, dict):
            problems.append(f"reports/agreement.json: {where} is {entry!r}, not an alpha entry")
            continue
        if entry.get("alpha") is not None and not (_number(entry["alpha"]) and entry["alpha"] <= 1):
            problems.append(f"reports/agreement.json: {where} alpha {entry['alpha']!r} is not a number <= 1")
        for key in ("ci95", "ci95_clustered"):
            ci = entry.get(key)
            if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_number, ci))):
                problems.append(f"reports/agreement.json: {where} {key} {ci!r} is not two numbers")
    return problems


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and abs(value) < NUMBER_LIMIT
