"""The card's "How the labels were checked" section: the validation protocol as the labels show it.

What each arm asked, who heard what, the consensus rule validation applied, the outcomes and the
controls, all counted from the released annotations and the agreement report. Apart from release.card so
the protocol's wording and counts read on their own; the card inserts the lines it returns.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from annotation.protocol import QUESTIONS
from construction.core.record import Sample
from construction.text.taxonomy import NOT_A_FRAME
from release.markdown import alpha, counter_text, demo_share, md, stats
from validation.arms import ArmRule

if TYPE_CHECKING:
    from release.inputs import ReleaseInputs

# what each arm asked (the questions of annotation.protocol's projects), for the card
ARM_TABLE = {
    "speech": ("speech alone", "the clean speech (`speech_audio`)", f"\"{QUESTIONS['speech']}\"",
               "yes (`harmful`) / no (`not_harmful`) / `unclear`"),
    "scene": ("scene alone", "the scene exactly as placed in the clip, speech removed (not shipped)",
              f"\"{QUESTIONS['scene']}\"", "one of the benign frames, `real_danger` or `cant_tell`"),
    "mixture": ("mixture", "the released clip (`audio`)",
                f"\"{QUESTIONS['mixture']}\" and \"I could make out the words\" (yes/no)",
                "`benign` / `harmful` / `unclear`"),
}


def _fraction(value: float) -> str:
    from fractions import Fraction

    return str(Fraction(value).limit_denominator(100))


def _rule(samples: list[Sample]) -> tuple[str, int]:
    """The consensus rule validation applied (min fraction as text, min labels per arm)."""
    default = ArmRule()
    seen = Counter((float(r.get("min_fraction", default.min_fraction)), int(r.get("min_labels", default.min_labels)))
                   for s in samples if (r := (s.provenance.get("validation.agreement") or {}).get("rule")))
    fraction, labels = seen.most_common(1)[0][0] if seen else (default.min_fraction, default.min_labels)
    return _fraction(fraction), labels


def staged(inputs: ReleaseInputs) -> bool:
    """Whether validation decided the arms as a staged build labels them (curtailed: two agreeing labels of
    a planned three settle an arm), as its stats record the rule it applied."""
    return bool(((inputs.workspace.read_stats("validated") or {}).get("rule") or {}).get("curtailed"))


def rule_text(inputs: ReleaseInputs) -> str:
    """The rule an arm (or a danger scene) was decided under, as validation applied it: "at least F of at
    least N counted labels", or, for a staged build, what its rounds stop at."""
    fraction, min_labels = _rule(inputs.samples)
    if not staged(inputs):
        return f"at least {fraction} of at least {min_labels} counted labels"
    return (f"at least {fraction} of the counted labels, asked in stages: as soon as the labels still to come, up "
            f"to {min_labels}, could not change the outcome, no more were asked (so fewer than {min_labels} agreeing "
            "labels may decide; the labels per clip are in the table)")


def _who_heard_what(rows: list[dict[str, Any]], control_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts from the released annotations: people per arm, people in several arms, clips labelled by
    one person in several arms, controls labelled by someone who also labelled their clip's mixture."""
    arms_of: dict[str, set[str]] = {}
    per_arm: dict[str, set[str]] = {}
    same_clip = 0
    mixture_of: dict[str, set[str]] = {}
    line_arms: dict[str, dict[str, set[str]]] = {}  # line -> person -> arms (a line's variants: the same words)
    for r in rows:
        by_person: dict[str, set[str]] = {}
        for a in r["annotations"]:
            by_person.setdefault(a["annotator"], set()).add(a["arm"])
            line_arms.setdefault(r.get("line_id") or r["id"], {}).setdefault(a["annotator"], set()).add(a["arm"])
            arms_of.setdefault(a["annotator"], set()).add(a["arm"])
            per_arm.setdefault(a["arm"], set()).add(a["annotator"])
        same_clip += any(len(arms) > 1 for arms in by_person.values())
        mixture_of[r["id"]] = {a["annotator"] for a in r["annotations"] if a["arm"] == "mixture"}
    control_people: set[str] = set()
    control_overlap = 0
    for r in control_rows:
        people = {a["annotator"] for a in r["annotations"]}
        control_people |= people
        control_overlap += bool(people & mixture_of.get(r["control_of"], set()))
    return {"per_arm": {arm: len(p) for arm, p in per_arm.items()},
            "several_arms": sum(len(arms) > 1 for arms in arms_of.values()), "same_clip": same_clip,
            "lines": len(line_arms) if len(line_arms) < len(rows) else 0,
            "same_line": sum(any(len(arms) > 1 for arms in people.values()) for people in line_arms.values()),
            "control_people": len(control_people), "control_overlap": control_overlap}


def _labels_per_clip(rows: list[dict[str, Any]], column: str) -> str:
    counts = Counter(r[column] for r in rows if r.get(column))
    return counter_text(counts) if counts else "none"


def protocol_section(inputs: ReleaseInputs, info: dict[str, Any], rows: list[dict[str, Any]],
                      control_rows: list[dict[str, Any]], categories: list[str]) -> list[str]:
    agreement = inputs.agreement
    fraction, min_labels = _rule(inputs.samples)
    who = _who_heard_what(rows, control_rows)
    adjudicated = sum(r["decided_by"] == "adjudication" for r in rows)
    consensus = agreement.get("consensus") or {}
    outcomes = ", ".join(f"{md(str(k).replace('_', ' '))} {md(v)}" for k, v in consensus.items()) or "n/a"
    n_controls = len(control_rows)
    kinds = Counter(r["control_kind"] for r in control_rows)
    kinds_text = ", ".join(f"{v} {md(k)}" for k, v in sorted(kinds.items()))
    control_rates = [r["mixture_harmful_rate"] for r in control_rows if r["mixture_harmful_rate"] is not None]

    if inputs.protocol != "three-arm":
        out = ["## How the labels were checked: the mixture only", "",
               "**Only the mixture was judged.** The annotators of this release heard the released clip "
               "(`audio`, the mixture) and labelled it `benign`, `harmful` or `unclear`. A clip is in this "
               f"release when {rule_text(inputs)} said benign, or "
               f"an adjudicator decided benign ({adjudicated} clips). A label counts once per person (their "
               "latest); skipped tasks do not count.", "",
               "The speech alone and the scene alone were not part of this release's validation, and no "
               "controls were part of its rule. So this release does **not** show, by human judgement, that the speech "
               "alone sounds harmful or that the scene alone is recognisable: the `speech_*` and `scene_*` "
               "columns are empty (null). The clean speech still ships as `speech_audio`, so models can be "
               "measured with and without the context; that it sounds harmful alone is the intent of the "
               "scripts, not a finding of the labelling.", "",
               f"- **Annotators:** {who['per_arm'].get('mixture', 0)} (pseudonymous ids A01...); labels per "
               f"clip: {_labels_per_clip(rows, 'mixture_n')}.",
               f"- **Agreement** (Krippendorff's alpha, mixture labels, every labelled sample of the build): "
               f"{alpha(agreement.get('overall'))}.",
               f"- **Outcomes over the labelled samples of the build:** {outcomes}."]
        if n_controls:
            out.append(f"- **Controls:** the `controls` config holds {n_controls} controls of released clips "
                       f"({kinds_text}) with their labels; they were **not** part of the validation rule. Share "
                       f"of their labels that said harmful: {stats(control_rates)}.")
        return out + ["", *twins_paragraph(inputs, rows, fraction, min_labels), ""]

    arms = agreement.get("arms") or {}
    controls = agreement.get("controls") or {}
    rejected = agreement.get("rejected_by_arm") or {}
    n_categories = len(categories)
    table = ["| arm | what was played | question | answers | people\\* | labels per released clip | "
             "alpha [95% CI]\\*\\* |", "|---|---|---|---|---:|---|---|"]
    for arm, column in (("speech", "speech_n"), ("scene", "scene_n"), ("mixture", "mixture_n")):
        name, played, question, answers = ARM_TABLE[arm]
        table.append(f"| {name} | {played} | {question} | {answers.format(n=n_categories)} | "
                     f"{who['per_arm'].get(arm, 0)} | {_labels_per_clip(rows, column)} | "
                     f"{alpha((arms.get(arm) or {}).get('overall'))} |")
    if n_controls:
        table.append(f"| controls | a control (`controls` config), in the mixture arm's project among the "
                     f"clips | as for the mixture | `benign` / `harmful` / `unclear` | {who['control_people']} | "
                     f"{_labels_per_clip(control_rows, 'mixture_n')} | (in the mixture arm) |")
    counts = [who["per_arm"].get(a, 0) for a in ("speech", "scene", "mixture")]
    arm_people = (f"{counts[0]} {'person' if counts[0] == 1 else 'people'} labelled the speech arm, {counts[1]} the "
                  f"scene arm and {counts[2]} the mixture arm")
    if who["same_clip"]:
        same = (f"On {who['same_clip']} of the {len(rows)} released clips, one person labelled the clip in more "
                "than one arm, so that person's later judgement was not blind to the other part of that clip.")
    else:
        same = ("Nobody labelled the same clip in more than one arm: each judgement of a clip was made by a "
                "person who had not judged another part of it (people may have heard the same words in "
                "another clip: speech lines are shared across scenes).")
    if who["lines"]:  # voice variants: a line's clips share its words and its scene
        same += (f" The {len(rows)} clips speak {who['lines']} lines in several voices; the scene arm heard each "
                 "line's scene once for all its voices, and "
                 + (f"on {who['same_line']} lines one person labelled the line (any of its voices) in more than one "
                    "arm." if who["same_line"] else "nobody labelled a line (any of its voices) in more than one arm."))
    control_text = ""
    if n_controls:
        control_text = (f" For {who['control_overlap']} of the {n_controls} released controls, someone who "
                        "labelled the control also labelled the mixture of the clip it controls (the same speech).")
    not_listened = sum((agreement.get("not_listened") or {}).values())
    rejected_text = ", ".join(f"{md(k)} {md(v)}" for k, v in sorted(rejected.items())) or "none"
    out = ["## How the labels were checked: three blind listening arms", "",
           ("Every label comes from annotators" + (f" (in this demo release: {demo_share(info['label_sources'])})"
                                                    if info["demo"] else "")
            + " who heard audio and nothing else: no script, no scene description, no category, no metadata. "
            "Each arm was its own annotation project with its own question:"), "",
           *table, "",
           "\\* distinct (pseudonymous) people whose labels on the released clips count. \\*\\* Krippendorff's "
           "alpha over every labelled sample of the build (released or not), with the 95% percentile bootstrap "
           "interval that resamples whole script families (clips of one speech skeleton are correlated; "
           "clip-level where there is a single family).", "",
           f"**Who heard what** (counted labels of the released clips): {arm_people}; {who['several_arms']} "
           f"of them worked in more than one arm. {same}{control_text}", "",
           (f"**Validation rule.** A clip is in this release only if all of these held, each over at least "
            f"{min_labels} counted labels of its arm:" if not staged(inputs) else
            f"**Validation rule.** A clip is in this release only if all of these held, each decided by "
            f"{rule_text(inputs)}; the share named below is of the labels its arm got:"), "",
           f"1. speech alone: at least {fraction} said harmful (the words alone sound concerning);",
           f"2. scene alone: at least {fraction} named one of the clip's benign frames (`frames`: the setting "
           "that makes the words harmless is heard in the scene alone); \"real danger\" never counts;",
           f"3. mixture: at least {fraction} said benign, or, where the mixture labels did not agree, an "
           f"adjudicator who heard the mixture decided benign ({adjudicated} released clips);",
           f"4. control, where the clip has one: at least {fraction} of the control's labels said harmful (the "
           "benign reading comes from the scene, not from the words).", "",
           "A label counts once per person (their latest); skipped tasks and labels given before the clip "
           f"could have played to its end ({not_listened} such labels in the build) do not count. "
           "Who made a label is what Label Studio recorded as the account that last saved it; any account may "
           "save a label in another's name, which is credited to the account that saved it, and labels whose "
           "maker Label Studio did not record (imported with the tasks) do not count. Label Studio cannot tell "
           "a person who uses two accounts, or hands theirs to someone else.", "",
           f"**Outcomes over the labelled samples of the build:** {outcomes}. Rejections by arm: {rejected_text}.",
           "",
           f"**Controls.** {md(controls.get('samples_with_control', 0))} labelled samples of the build had a "
           f"control; {md(controls.get('controls_judged_harmful', 0))} of those controls were judged harmful. "
           + (f"This release ships the {n_controls} controls of its clips in the `controls` config "
              f"({kinds_text}); share of their labels that said harmful: {stats(control_rates)}."
              if n_controls else "This release ships no controls (none of its clips has one)."), "",
           *twins_paragraph(inputs, rows, fraction, min_labels), "",
           "**What this shows, and what it does not.** For each released clip, the few people who heard the "
           "speech alone found it concerning, those who heard the scene alone recognised the setting, and those "
           "who heard the mixture judged it benign. It does not show that every listener would agree (read the "
           "alpha per arm and category), nor, for clips without a control, that the scene is what makes the "
           "mixture sound benign.", ""]
    return out


def twins_paragraph(inputs: ReleaseInputs, rows: list[dict[str, Any]], fraction: str, min_labels: int) -> list[str]:
    """The rule each twin shipped under, as validation applied it (validation.arms: the irrelevant twin's
    background certified neutral, the danger twin's scene certified as real danger), with the counts."""
    verdicts = {kind: Counter(((s.provenance.get("validation.agreement") or {}).get("arms") or {})
                              .get(kind, {}).get("certified") for s in inputs.samples if getattr(s, field) is not None)
                for kind, field in (("irrelevant", "irrelevant_audio"), ("danger", "danger_audio"))}
    if not any(verdicts.values()):
        return []
    if inputs.protocol != "three-arm":
        return ["**The twins.** No twin ships in this release (`irrelevant_audio` and `danger_audio` are null): a "
                "twin ships only where listeners who heard its background alone certified it, and this release's "
                "validation had no scene arm."]
    rule = (inputs.workspace.read_stats("validated") or {}).get("rule") or {}
    staged = (f" (labelled in stages: a background was decided as soon as the labels still to come, up to "
              f"{min_labels}, could not change the outcome, so fewer agreeing labels may decide it)"
              if rule.get("curtailed") else "")
    out = ("**The twins.** The scene arm's listeners also heard each twin's background alone (no speech), as "
           "one more task among the scenes, with the same question and answers and nothing telling it apart. "
           f"A twin ships only where they certified its background, over at least {min_labels} counted "
           f"labels{staged}:")
    shipped = {kind: sum(r.get(f"{kind}_audio_sha256") is not None for r in rows) for kind in verdicts}
    if verdicts["irrelevant"]:
        v = verdicts["irrelevant"]
        out += (f" the irrelevant twin (`irrelevant_audio`) where at least {fraction} answered \"I can't tell\", "
                "hearing no setting in it; a frame named and \"real danger\" both count against it, since a "
                "background heard as a setting or as danger is no neutral baseline for the words. "
                f"{shipped['irrelevant']} of the {len(rows)} released clips ship one; not certified: {v[False]} "
                f"(heard as a setting or as danger); too few labels: {sum(v.values()) - v[True] - v[False]}.")
    if verdicts["danger"]:
        v = verdicts["danger"]
        out += (f" The danger twin (`danger_audio`) where at least {fraction} answered \"real danger\": "
                f"{shipped['danger']} of the {len(rows)} released clips ship one; not certified: {v[False]}; too "
                f"few labels: {sum(v.values()) - v[True] - v[False]}.")
    return [out]


def frame_matrix_section(agreement: dict[str, Any], categories: list[str]) -> list[str]:
    """Per category, the scene arm's frame confusion matrix (validation.arms.frame_confusion, in the
    agreement report): which frames listeners named for the frames the category's samples accept, and the
    share who heard real danger."""
    matrices = agreement.get("scene_frames") or {}
    if not matrices:
        return []
    out = ["## Scene arm: which frames listeners named", "",
           "Per category, over every labelled sample of the build (released or not): rows are the benign "
           "frames the samples accept (`frames`; a scene that accepts two shows both, joined by +), columns "
           "the answers people who heard the scene alone gave, cells counted labels. A clip's scene is "
           "recognised when its listeners named one of its own frames; \"real danger\" (`real_danger`) "
           "never counts as recognised.", ""]
    for category in [c for c in categories if c in matrices] + sorted(set(matrices) - set(categories)):
        entry = matrices[category]
        rows = entry.get("rows") or {}
        named = sorted({label for row in rows.values() for label in row} - set(NOT_A_FRAME))
        columns = [*named, *NOT_A_FRAME]
        share = entry.get("real_danger_share")
        own = entry.get("identified_share")
        out += [f"**{md(category)}**: {md(entry.get('n', 0))} labels; "
                f"{'n/a' if own is None else f'{own:.0%}'} named one of the sample's own frames, "
                f"{'n/a' if share is None else f'{share:.0%}'} real danger.", "",
                "| frames accepted | " + " | ".join(md(c) for c in columns) + " |",
                "|---|" + "---:|" * len(columns)]
        out += [f"| {md(frames)} | " + " | ".join(str(row.get(c, 0)) for c in columns) + " |"
                for frames, row in rows.items()]
        out.append("")
    return out
