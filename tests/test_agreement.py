"""validation.agreement: statistics checked against published worked examples, degenerate cases, the
consensus rule with adjudication, and both command modes (CSV and workspace) end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from construction.core.cli import run_main
from construction.core.errors import WorkbenchError
from construction.core.record import Annotation, Sample
from construction.core.workspace import Workspace
from construction.text.taxonomy import Taxonomy
from tests.conftest import run_module
from validation.agreement import (
    ConsensusRule,
    adjudication_queue,
    annotator_agreement,
    apply_adjudication,
    apply_consensus,
    decide,
    fleiss_kappa,
    krippendorff_alpha,
    main,
    pairwise_cohen,
    prepare_ratings,
    run_workspace,
    samples_to_ratings,
)
from validation.arms import arm_results, frame_confusion, sample_frames

# Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability", section C: "Nominal data, any
# number of observers, missing data" -- 4 observers x 12 units (None = not coded). The paper reports
# alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval), 0.797 (ratio) for these data; the same
# matrix and numbers appear in the `krippendorff` package's docstring ("fulltext.pdf, page 8") and the
# Stata kalpha help file.
K2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}

# Wikipedia, "Krippendorff's alpha", section "A computational example": 3 coders x 15 units,
# nominal alpha = 0.691, interval alpha = 0.811 (also the package docstring's first example).
WIKI_ALPHA = {
    "A": [None, None, None, None, None, 3, 4, 1, 2, 1, 1, 3, 3, None, 3],
    "B": [1, None, 2, 1, 3, 3, 4, 3, None, None, None, None, None, None, None],
    "C": [None, None, 2, 1, 3, 4, 4, None, 2, 1, 1, 3, 3, None, 4],
}

# Fleiss (1971) worked example as given on Wikipedia ("Fleiss' kappa", Worked example): 10 subjects,
# 14 raters each, 5 categories; cell = raters who put subject i in category j. kappa = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def long_format(matrix: dict[str, list], as_text: bool = False) -> list[tuple[str, str, object]]:
    return [(f"u{j + 1}", coder, (f"v{v}" if as_text else v))
            for coder, values in matrix.items() for j, v in enumerate(values) if v is not None]


def fleiss_ratings() -> list[tuple[str, str, str]]:
    rows = []
    for i, counts in enumerate(FLEISS_TABLE):
        raters = iter(range(14))  # Fleiss allows different raters per subject; numbering is arbitrary
        for category, n in enumerate(counts):
            rows += [(f"s{i}", f"r{next(raters)}", f"c{category}") for _ in range(n)]
    return rows


def cohen_ratings() -> list[tuple[int, str, str]]:
    # Wikipedia, "Cohen's kappa", simple example: 50 grant proposals, readers A and B; both yes 20,
    # A yes/B no 5, A no/B yes 10, both no 15 -> p_o = 0.70, p_e = 0.50, kappa = 0.40.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    return [(i, "A", x) for i, x in enumerate(a)] + [(i, "B", x) for i, x in enumerate(b)]


# ---------------------------------------------------------------------------------------------
# published examples
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815),
                                             ("interval", 0.849), ("ratio", 0.797)])
def test_alpha_krippendorff_2011(level: str, expected: float) -> None:
    result = krippendorff_alpha(long_format(K2011), level, n_boot=0)
    assert round(result.alpha, 3) == expected
    assert (result.n_units, result.n_annotators, result.n_ratings) == (11, 4, 41)  # unit 12 has 1 value


def test_alpha_with_text_labels() -> None:
    """Text labels work for nominal data and, with an ordered label list, for ordinal data."""
    rows = long_format(K2011, as_text=True)
    assert round(krippendorff_alpha(rows, "nominal", n_boot=0).alpha, 3) == 0.743
    ordered = ["v1", "v2", "v3", "v4", "v5"]
    assert round(krippendorff_alpha(rows, "ordinal", ordered, n_boot=0).alpha, 3) == 0.815
    with pytest.raises(WorkbenchError, match="numeric labels or an ordered label list"):
        krippendorff_alpha(rows, "interval")


def test_alpha_wikipedia_example() -> None:
    rows = long_format(WIKI_ALPHA)
    assert round(krippendorff_alpha(rows, "nominal", n_boot=0).alpha, 3) == 0.691
    assert round(krippendorff_alpha(rows, "interval", n_boot=0).alpha, 3) == 0.811


def test_fleiss_kappa_published_example() -> None:
    result = fleiss_kappa(fleiss_ratings())
    assert round(result["kappa"], 3) == 0.210
    assert (result["n_units"], result["raters_per_unit"], result["n_units_excluded"]) == (10, 14, 0)


def test_fleiss_uses_units_with_the_usual_number_of_raters() -> None:
    extra = [("partial", "r0", "c0"), ("partial", "r1", "c4")]  # only 2 raters: left out, counted
    result = fleiss_kappa(fleiss_ratings() + extra)
    assert round(result["kappa"], 3) == 0.210
    assert result["n_units_excluded"] == 1
    assert "left out" in result["note"]


def test_cohen_kappa_published_example() -> None:
    [pair] = pairwise_cohen(cohen_ratings())
    assert (pair["a"], pair["b"], pair["n_units"]) == ("A", "B", 50)
    assert pair["agreement"] == pytest.approx(0.70)
    assert pair["kappa"] == pytest.approx(0.40)


# ---------------------------------------------------------------------------------------------
# per-annotator agreement, degenerate cases, bootstrap
# ---------------------------------------------------------------------------------------------

def test_leave_one_out_majority_spots_the_careless_annotator() -> None:
    rows = []
    for u in range(6):
        rows += [(u, "a", "benign"), (u, "b", "benign"), (u, "c", "benign" if u < 5 else "harmful"),
                 (u, "careless", "harmful")]
    rows += [("t", "a", "benign"), ("t", "b", "harmful"), ("t", "c", "unclear")]  # others always tie
    result = annotator_agreement(rows)
    assert result["careless"]["agreement"] == 0.0 and result["careless"]["n_compared"] == 6
    # on u5 the careless annotator's vote tips the others' majority against a and b
    assert [result[k]["agreement"] for k in ("a", "b", "c")] == [0.8333] * 3
    assert result["a"]["n_ties"] == 1 and result["a"]["n_compared"] == 6  # the tied unit is excluded


def test_everyone_gives_the_same_label() -> None:
    rows = [(u, a, "benign") for u in range(5) for a in ("x", "y", "z")]
    result = krippendorff_alpha(rows, labels=["benign", "harmful", "unclear"])
    assert result.alpha is None and result.ci95 is None
    assert "no variation" in result.note and "'benign'" in result.note
    assert fleiss_kappa(rows)["kappa"] is None and "no variation" in fleiss_kappa(rows)["note"]
    assert all(p["kappa"] is None and "no variation" in p["note"] for p in pairwise_cohen(rows))


def test_single_annotator() -> None:
    result = krippendorff_alpha([(u, "solo", lab) for u, lab in enumerate(["a", "b", "a"])])
    assert result.alpha is None and "only one annotator (solo)" in result.note
    assert annotator_agreement([(0, "solo", "a")])["solo"]["note"] == "no unit shared with another annotator"


def test_no_overlap() -> None:
    rows = [(0, "x", "a"), (1, "y", "b"), (2, "z", "a")]
    result = krippendorff_alpha(rows)
    assert result.alpha is None and result.n_units == 0 and "no overlap" in result.note
    assert pairwise_cohen(rows) == []
    assert fleiss_kappa(rows)["kappa"] is None


def test_labels_outside_the_set_are_excluded_and_counted() -> None:
    rows = long_format(K2011, as_text=True) + [("u1", "B", "oops"), ("u2", "E", "oops"), ("u3", "E", "???")]
    labels = ["v1", "v2", "v3", "v4", "v5"]
    r = prepare_ratings(rows, labels=labels)
    assert r.out_of_set == {"oops": 2, "???": 1}
    result = krippendorff_alpha(rows, labels=labels, n_boot=0)
    # u1/B 'oops' is excluded, so B's earlier '1' on u1 stays: the published value is unchanged
    assert round(result.alpha, 3) == 0.743
    assert "excluded 3 rating(s) with labels outside the label set" in result.note


def test_missing_and_repeated_ratings() -> None:
    rows = [(0, "x", "a"), (0, "y", "a"), (1, "x", "b"), (1, "y", None), (1, "y", "b"), (2, "x", float("nan")),
            (2, "x", "a"), (2, "y", "b")]
    r = prepare_ratings(rows)
    assert r.n_missing == 2 and r.n_duplicates == 0
    r = prepare_ratings(rows + [(2, "y", "a")])  # y changes their mind on unit 2: the last label counts
    assert r.n_duplicates == 1
    assert r.value_counts.tolist() == [[2, 0], [0, 2], [2, 0]]
    assert "kept the last" in krippendorff_alpha(rows + [(2, "y", "a")]).note


def test_bootstrap_ci_contains_estimate_and_is_deterministic() -> None:
    rng = np.random.default_rng(7)
    truth = rng.choice(["benign", "harmful", "unclear"], size=80, p=[0.6, 0.3, 0.1])
    rows = [(u, f"a{k}", t if rng.random() < 0.8 else rng.choice(["benign", "harmful", "unclear"]))
            for u, t in enumerate(truth) for k in range(3)]
    first = krippendorff_alpha(rows, n_boot=300, seed=3)
    assert first.ci95[0] < first.alpha < first.ci95[1]
    assert 0 < first.ci95[1] - first.ci95[0] < 0.5
    assert krippendorff_alpha(rows, n_boot=300, seed=3).ci95 == first.ci95
    assert krippendorff_alpha(rows, n_boot=300, seed=4).ci95 != first.ci95


def test_bad_level() -> None:
    with pytest.raises(WorkbenchError, match="unknown level"):
        krippendorff_alpha(cohen_ratings(), "fuzzy")


# ---------------------------------------------------------------------------------------------
# consensus and adjudication
# ---------------------------------------------------------------------------------------------

FRAME = {"video_games": "video_game", "cooking_household": "kitchen"}  # the shipped taxonomy's


def make_sample(sample_id: str, labels: list[str | None], category: str = "video_games",
                cancelled: tuple[int, ...] = (), frames: list[str] | None = None) -> Sample:
    annotations = [Annotation(annotator=f"ann{i}", label=label, cancelled=i in cancelled)
                   for i, label in enumerate(labels)]
    return Sample(sample_id=sample_id, category=category, speech_text="Finish him!", context="A game.",
                  background_tags=["gunfire"], placement="underlay", benign_reason="A game.",
                  speaker_style="excited", annotations=annotations,
                  frames=[FRAME[category]] if frames is None else frames)


def test_consensus_rule_defaults() -> None:
    samples = [
        make_sample("all-benign", ["benign", "benign", "benign"]),
        make_sample("two-of-three", ["benign", "harmful", "benign"]),
        make_sample("harmful", ["harmful", "unclear", "harmful"]),
        make_sample("split", ["benign", "harmful", "unclear"]),
        make_sample("skips", ["benign", "benign", None, "benign"], cancelled=(3,)),  # 2 real labels
        make_sample("skip-ok", ["benign", "benign", "harmful", "harmful"], cancelled=(3,)),
    ]
    validated, harmful, queue, needs = apply_consensus(samples)
    assert [s.sample_id for s in validated] == ["all-benign", "two-of-three", "skip-ok"]
    assert [s.sample_id for s in harmful] == ["harmful"]
    assert [s.sample_id for s in queue] == ["split"]
    assert [s.sample_id for s in needs] == ["skips"]
    by_id = {s.sample_id: s for s in validated + harmful + queue + needs}
    assert (by_id["all-benign"].consensus_label, by_id["all-benign"].agreement) == ("benign", 1.0)
    assert by_id["two-of-three"].agreement == pytest.approx(2 / 3, abs=1e-4)
    assert by_id["two-of-three"].decided_by == "majority"
    assert (by_id["harmful"].consensus_label, by_id["harmful"].decided_by) == ("harmful", "majority")
    assert (by_id["split"].consensus_label, by_id["split"].decided_by) == (None, None)
    assert by_id["split"].agreement == pytest.approx(1 / 3, abs=1e-4)
    assert by_id["skips"].consensus_label is None
    assert by_id["skip-ok"].provenance["validation.agreement"]["n_labels"] == 3
    assert samples[0].consensus_label is None  # inputs are not modified


def test_consensus_reasons_and_repeat_votes() -> None:
    assert decide(make_sample("h", ["harmful"] * 3)).reason == "harmful_consensus: 3/3 labels harmful"
    assert decide(make_sample("q", ["benign", "harmful", "unclear"])).reason.startswith(
        "needs_adjudication: no label reaches 2/3")
    assert decide(make_sample("n", ["benign"])).reason.startswith("needs_labels: 1 non-skipped label(s) < 3")
    # one annotator labelling twice counts once, with their last label
    twice = make_sample("t", ["benign", "benign", "harmful"])
    twice.annotations[1].annotator = "ann0"
    assert decide(twice).outcome == "needs_labels"


def test_configured_rule() -> None:
    rule = ConsensusRule(min_fraction=0.75, min_labels=4)
    assert decide(make_sample("a", ["benign"] * 3 + ["harmful"]), rule).outcome == "validated"
    assert decide(make_sample("b", ["benign"] * 2 + ["harmful"] * 2), rule).outcome == "adjudication"
    assert decide(make_sample("c", ["benign"] * 3), rule).outcome == "needs_labels"
    with pytest.raises(WorkbenchError, match="min_fraction"):
        ConsensusRule(min_fraction=0.5)


def test_adjudication_overrides_and_is_final() -> None:
    samples = [make_sample("split", ["benign", "harmful", "unclear"]),
               make_sample("majority-harmful", ["harmful", "harmful", "benign"]),
               make_sample("fine", ["benign"] * 3)]
    assert [s.sample_id for s in adjudication_queue(samples)] == ["split"]
    decided = apply_adjudication(samples, {"split": "benign",
                                           "majority-harmful": Annotation(annotator="lead", label="benign",
                                                                          rationale="boxing commentary")})
    validated, harmful, queue, needs = apply_consensus(decided)
    assert [s.sample_id for s in validated] == ["split", "majority-harmful", "fine"]
    assert queue == [] and harmful == [] and needs == []
    split, overridden, fine = validated
    assert (split.decided_by, split.consensus_label) == ("adjudication", "benign")
    assert split.agreement == pytest.approx(1 / 3, abs=1e-4)  # annotators' labels equal to the decision
    assert overridden.decided_by == "adjudication" and overridden.annotations[-1].annotator == "lead"
    assert fine.decided_by == "majority"
    # the decision is not a rating: agreement statistics see only the three annotators
    assert len(samples_to_ratings(decided)) == 9
    # a later decision replaces an earlier one
    again = apply_adjudication(decided, {"split": "harmful"})
    assert decide(again[0]).outcome == "harmful" and decide(again[0]).reason.startswith("harmful_consensus")


def test_adjudication_bad_input() -> None:
    samples = [make_sample("split", ["benign", "harmful", "unclear"])]
    with pytest.raises(WorkbenchError, match="unknown sample ids"):
        apply_adjudication(samples, {"nope": "benign"})
    with pytest.raises(WorkbenchError, match="must be 'benign' or 'harmful'"):
        apply_adjudication(samples, {"split": "unclear"})


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------

def write_csv(path: Path, rows: list[tuple]) -> Path:
    path.write_text("unit_id,annotator_id,label\n" + "".join(f"{u},{a},{v}\n" for u, a, v in rows))
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """The command in-process (same run_main path as `python -m`, without paying the import time)."""
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_csv_command(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    csv = write_csv(tmp_path / "k2011.csv", long_format(K2011))
    proc = run_module("validation.agreement", "--ratings", str(csv), "--level", "interval", "--n-boot", "200",
                      timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "overall                   0.849" in proc.stdout
    assert "Fleiss' kappa" in proc.stdout and "Cohen's kappa" in proc.stdout
    text = write_csv(tmp_path / "text.csv", long_format(K2011, as_text=True))
    code, out, err = run_cli(["--ratings", str(text), "--level", "ordinal", "--labels", "v1,v2,v3,v4,v5",
                              "--n-boot", "50"], capsys)
    assert code == 0 and "overall                   0.815" in out, err


def test_csv_command_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("item,rater,value\n1,a,x\n")
    proc = run_module("validation.agreement", "--ratings", str(bad), timeout=120)
    assert proc.returncode == 2
    assert "missing column(s) ['unit_id', 'annotator_id', 'label']" in proc.stderr
    assert "Traceback" not in proc.stderr
    code, _, err = run_cli(["--ratings", str(tmp_path / "absent.csv")], capsys)
    assert code == 2 and "does not exist" in err
    (tmp_path / "empty.csv").write_text("unit_id,annotator_id,label\n")
    code, _, err = run_cli(["--ratings", str(tmp_path / "empty.csv")], capsys)
    assert code == 2 and "no ratings" in err
    text = write_csv(tmp_path / "text.csv", long_format(K2011, as_text=True))
    code, _, err = run_cli(["--ratings", str(text), "--level", "ratio"], capsys)
    assert code == 2 and "needs numeric labels" in err


def test_bootstrap_seed_old_spelling_still_works_and_warns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--seed is the build seed on every other command: here the bootstrap's is --bootstrap-seed, and the old
    --seed still sets it for one release, with a one-line warning."""
    csv = write_csv(tmp_path / "k2011.csv", long_format(K2011))
    argv = ["--ratings", str(csv), "--level", "interval", "--n-boot", "50"]
    code, default, _ = run_cli(argv, capsys)
    code, new, err = run_cli([*argv, "--bootstrap-seed", "7"], capsys)
    assert code == 0 and new != default and "deprecated" not in err  # the seed moves the bootstrap CIs
    code, old, err = run_cli([*argv, "--seed", "7"], capsys)
    assert code == 0 and old == new
    assert err.strip() == "warning: --seed is deprecated and goes in the next release; use --bootstrap-seed"


def test_workspace_is_the_default_source(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch) -> None:
    """Like every other command, ./workspace unless --workspace or --ratings says otherwise."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli([], capsys)
    assert code == 2 and f"workspace {tmp_path / 'workspace'} does not exist" in err and "pull" not in err
    assert not (tmp_path / "workspace").exists()  # refused before any folder is made
    (tmp_path / "workspace").mkdir()  # a workspace with nothing pulled yet: pull first, as a command
    code, _, err = run_cli([], capsys)
    assert code == 2 and f"no 'annotated' manifest at {tmp_path / 'workspace'}" in err
    assert "(python -m annotation.pull)" in err
    code, _, err = run_cli(["--ratings", "a.csv", "--workspace", str(tmp_path / "ws")], capsys)
    assert code == 2 and "not allowed with argument" in err


def annotated_workspace(root: Path) -> Workspace:
    ws = Workspace(root)
    rng = np.random.default_rng(1)
    samples = []
    for i in range(24):
        category = "video_games" if i % 2 else "cooking_household"
        truth = "benign" if i % 4 else "harmful"
        labels = [truth if rng.random() < 0.85 else str(rng.choice(["benign", "harmful", "unclear"]))
                  for _ in range(3)]
        samples.append(make_sample(f"aor-{i:02d}", labels, category))
    samples.append(make_sample("aor-split", ["benign", "harmful", "unclear"], "video_games"))
    samples.append(make_sample("aor-few", ["benign", "benign", None], "video_games", cancelled=(2,)))
    ws.write_manifest("annotated", [with_other_arms(s) for s in samples])
    return ws


def with_other_arms(sample: Sample, speech: tuple[str, ...] = ("harmful",) * 3,
                    scene: tuple[str, ...] | None = None) -> Sample:
    """The sample with speech-alone and scene-alone labels by other people (by default: the speech
    sounds harmful, the scene's first frame is named)."""
    scene = scene or (sample_frames(sample)[0],) * 3
    extra = [Annotation(annotator=f"speech{i}", label=label, arm="speech") for i, label in enumerate(speech)]
    extra += [Annotation(annotator=f"scene{i}", label=label, arm="scene") for i, label in enumerate(scene)]
    return sample.model_copy(update={"annotations": [*sample.annotations, *extra]})


def test_three_arm_rule_rejects_with_each_failing_arm(tmp_path: Path) -> None:
    """A sample is validated only if the speech alone sounds harmful, the scene alone is recognised, the
    mixture is benign and its control (if any) is harmful; otherwise the arm that failed is named."""
    benign = ["benign"] * 3
    samples = [
        with_other_arms(make_sample("aor-ok", benign)),
        with_other_arms(make_sample("aor-soft-speech", benign), speech=("not_harmful", "not_harmful", "harmful")),
        with_other_arms(make_sample("aor-unknown-scene", benign), scene=("cant_tell", "kitchen", "video_game")),
        with_other_arms(make_sample("aor-harmful-mix", ["harmful", "harmful", "benign"])),
        with_other_arms(make_sample("aor-control-benign", benign)),
        with_other_arms(make_sample("aor-few-speech", benign), speech=("harmful",)),
        with_other_arms(make_sample("aor-unheard", benign)),
    ]
    # in aor-unheard two of the mixture labels came before the clip had played: they do not count
    unheard = samples[-1]
    unheard.annotations[0].listened = unheard.annotations[1].listened = False
    ws = Workspace(tmp_path / "ws")
    ws.write_manifest("annotated", samples)
    control = Sample(sample_id="ctl-1", category="video_games", speech_text="Finish him!", context="-",
                     background_tags=[], placement="underlay", benign_reason="-", speaker_style="excited",
                     custom={"control_of": "aor-control-benign", "control": "mismatched", "expected": "harmful"},
                     annotations=[Annotation(annotator=f"c{i}", label=label) for i, label in
                                  enumerate(["benign", "benign", "harmful"])])
    ok_control = control.model_copy(update={"sample_id": "ctl-2", "custom": {**control.custom, "control_of": "aor-ok"},
                                            "annotations": [Annotation(annotator=f"c{i}", label="harmful")
                                                            for i in range(3)]})
    ws.write_manifest("annotated_controls", [control, ok_control])
    report = run_workspace(ws, n_boot=50)
    reasons = {r.sample.sample_id: r.reason for r in ws.read_rejected("validated")}
    assert [s.sample_id for s in ws.read_samples("validated")] == ["aor-ok"]
    assert reasons["aor-soft-speech"] == "speech_not_harmful: 1/3 heard the speech alone as harmful"
    assert reasons["aor-unknown-scene"] == ("scene_not_identified: 1/3 named video_game (0 real danger, "
                                            "1 could not tell)")
    assert reasons["aor-harmful-mix"].startswith("harmful_consensus: 2/3 labels harmful")
    assert reasons["aor-control-benign"] == "control_not_harmful: 1/3 heard control ctl-1 (mismatched) as harmful"
    assert reasons["aor-few-speech"] == "needs_labels: speech arm: 1 label(s) < 3"
    assert reasons["aor-unheard"].startswith("needs_labels: 1 non-skipped label(s) < 3")
    assert report["consensus"]["arm_failed"] == 3 and report["controls"] == {"samples_with_control": 2,
                                                                            "controls_judged_harmful": 1}
    assert report["rejected_by_arm"] == {"speech_not_harmful": 1, "scene_not_identified": 1, "control_not_harmful": 1}
    assert report["not_listened"] == {"ann0": 1, "ann1": 1}
    assert set(report["arms"]) == {"speech", "scene", "mixture"}
    [ok] = ws.read_samples("validated")
    arms = ok.provenance["validation.agreement"]["arms"]
    assert arms["speech"]["harmful_rate"] == 1.0 and arms["scene"]["identified_rate"] == 1.0
    assert arms["control"] == {"id": "ctl-2", "kind": "mismatched", "n": 3, "harmful": 3, "harmful_rate": 1.0}
    # the one-arm protocol of older workspaces judges the mixture labels alone
    run_workspace(ws, n_boot=50, protocol="mixture")
    assert len(list(ws.read_samples("validated"))) == 5


def test_workspace_command(tmp_path: Path) -> None:
    ws = annotated_workspace(tmp_path / "ws")
    proc = run_module("validation.agreement", "--workspace", str(ws.root), "--n-boot", "200", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "overall" in proc.stdout and "cooking_household" in proc.stdout and "Consensus:" in proc.stdout

    report = json.loads((ws.root / "reports" / "agreement.json").read_text())
    assert set(report) == {"protocol", "overall", "per_category", "fleiss_kappa", "cohen_pairwise", "annotators",
                           "consensus", "level", "labels", "rejected_by_arm", "arms", "controls", "not_listened",
                           "danger_twins", "irrelevant_twins", "scene_frames"}
    shape = {"alpha", "ci95", "ci95_clustered", "n_families", "n_units", "n_annotators", "note", "variation"}
    assert set(report["overall"]) == shape
    assert set(report["per_category"]) == {"cooking_household", "video_games"}
    assert all(set(v) == shape for v in report["per_category"].values())
    assert report["level"] == "nominal" and report["labels"] == ["benign", "harmful", "unclear"]
    assert report["overall"]["ci95"][0] <= report["overall"]["alpha"] <= report["overall"]["ci95"][1]
    assert report["overall"]["n_units"] == 26  # aor-few's 2 ratings count for alpha, not for consensus
    assert (ws.root / "reports" / "agreement.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    kept = list(ws.read_samples("validated"))
    rejected = list(ws.read_rejected("validated"))
    consensus = report["consensus"]
    assert consensus["validated"] == len(kept) > 0
    assert sum(consensus.values()) == 26 == len(kept) + len(rejected)
    assert all(s.consensus_label == "benign" and s.decided_by == "majority" for s in kept)
    reasons = {r.sample.sample_id: r.reason for r in rejected}
    assert reasons["aor-split"].startswith("needs_adjudication: ")
    assert reasons["aor-few"].startswith("needs_labels: ")
    assert consensus["harmful"] == sum(r.startswith("harmful_consensus: ") for r in reasons.values()) > 0
    stats = ws.read_stats("validated")
    assert stats["kept"] == len(kept) and stats["consensus"] == consensus


def test_workspace_without_annotations(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ws = Workspace(tmp_path / "ws")
    code, _, err = run_cli(["--workspace", str(ws.root)], capsys)
    assert code == 2 and "no 'annotated' manifest" in err
    assert not ws.has_manifest("validated") and not (ws.root / "reports").exists()


def test_workspace_where_everyone_agrees(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Degenerate data still gives a report: alpha null with the reason, a plot, and all samples validated."""
    ws = Workspace(tmp_path / "ws")
    ws.write_manifest("annotated", [with_other_arms(make_sample(f"aor-{i}", ["benign"] * 3)) for i in range(4)])
    code, out, err = run_cli(["--workspace", str(ws.root), "--n-boot", "20"], capsys)
    assert code == 0, err
    report = json.loads((ws.root / "reports" / "agreement.json").read_text())
    assert report["overall"]["alpha"] is None and report["overall"]["ci95"] is None
    assert "no variation" in report["overall"]["note"] and "no variation" in out
    assert "overall                  alpha undefined: no variation (all 12 labels are 'benign')" in out
    assert report["overall"]["variation"] == {"label": "benign", "count": 12, "of": 12, "units_with_other_labels": 0}
    assert report["consensus"] == {"validated": 4, "harmful": 0, "adjudication": 0, "needs_labels": 0,
                                   "arm_failed": 0}
    assert (ws.root / "reports" / "agreement.png").stat().st_size > 0


def test_a_workspace_part_way_through_labelling(tmp_path: Path) -> None:
    """Mixture labels only (the other arms not labelled yet): a report, nothing validated, no crash."""
    ws = Workspace(tmp_path / "ws")
    ws.write_manifest("annotated", [make_sample(f"aor-{i}", ["benign", "benign", "harmful"]) for i in range(4)])
    report = run_workspace(ws, n_boot=20)
    assert report["arms"]["speech"]["overall"]["alpha"] is None
    assert "no ratings" in report["arms"]["speech"]["overall"]["note"]
    assert report["consensus"]["needs_labels"] == 4
    reasons = [r.reason for r in ws.read_rejected("validated")]
    assert all(r == "needs_labels: speech arm: 0 label(s) < 3; scene arm: 0 label(s) < 3" for r in reasons)


# ---------------------------------------------------------------------------------------------
# the scene arm: benign frames
# ---------------------------------------------------------------------------------------------

def scene_sample(sample_id: str, scene: tuple[str, ...], frames: list[str], category: str = "sports_fitness",
                 **fields) -> Sample:
    return with_other_arms(make_sample(sample_id, ["benign"] * 3, "video_games", frames=frames), scene=scene
                           ).model_copy(update={"category": category, **fields})


def test_the_scene_arm_accepts_any_listed_frame_and_never_real_danger() -> None:
    """Either frame of a two-frame scene recognises it; "real danger" is counted, never recognised."""
    two = ["sport", "show"]
    either = decide(scene_sample("s-either", ("sport", "show", "show"), two), protocol="three-arm")
    assert either.outcome == "validated"
    assert either.sample.provenance["validation.agreement"]["arms"]["scene"]["identified"] == 3
    only_show = decide(scene_sample("s-show", ("show",) * 3, two), protocol="three-arm")
    assert only_show.outcome == "validated"
    danger = decide(scene_sample("s-danger", ("real_danger", "real_danger", "sport"), two), protocol="three-arm")
    assert danger.outcome == "arm_failed"
    assert danger.reason == "scene_not_identified: 1/3 named sport or show (2 real danger, 0 could not tell)"
    result = danger.sample.provenance["validation.agreement"]["arms"]["scene"]
    assert (result["real_danger"], result["real_danger_rate"], result["identified_rate"]) == (2, 0.6667, 0.3333)
    assert result["named"] == {"real_danger": 2, "sport": 1} and result["frames"] == two
    # a frame the scene does not accept is not recognition, even a neighbouring one
    assert decide(scene_sample("s-game", ("video_game", "sport", "sport"), ["sport"]),
                  protocol="three-arm").outcome == "validated"
    assert decide(scene_sample("s-game2", ("video_game", "video_game", "sport"), ["sport"]),
                  protocol="three-arm").outcome == "arm_failed"
    # the category id is not a frame: a workspace labelled before frames does not pass by it
    assert decide(scene_sample("s-cat", ("sports_fitness",) * 3, ["sport"]), protocol="three-arm").outcome == "arm_failed"


def test_older_samples_take_their_frames_from_the_taxonomy() -> None:
    """A sample without frames (an older workspace): its scene's frames in the taxonomy, else its category's."""
    data = yaml.safe_load(Path("construction/data/taxonomy.yaml").read_text())
    sports = next(c for c in data["categories"] if c["id"] == "sports_fitness")
    scene_id = sports["scenes"][0]["id"]
    sports["scenes"][0]["frames"] = ["sport", "show"]
    taxonomy = Taxonomy.model_validate(data)
    old = scene_sample("s-old", ("show",) * 3, [], scene_id=scene_id)
    assert sample_frames(old, taxonomy) == ["sport", "show"]
    assert sample_frames(old) == ["sport"]  # the shipped taxonomy: the category's frame
    assert decide(old, protocol="three-arm", taxonomy=taxonomy).outcome == "validated"
    assert decide(old, protocol="three-arm").outcome == "arm_failed"
    no_scene = scene_sample("s-older", ("kitchen",) * 3, [], category="cooking_household")
    assert sample_frames(no_scene, taxonomy) == ["kitchen"]
    assert arm_results(no_scene)["scene"]["identified"] == 3
    frameless = Taxonomy.model_validate({**data, "frames": [],
                                          "categories": [{**c, "frame": None} for c in data["categories"]]})
    assert sample_frames(no_scene, frameless) == ["cooking_household"]  # one frame per category


def test_frame_confusion_matrix_by_hand() -> None:
    """Rows: the frames the category's samples accept; columns: the answers; counted labels."""
    samples = [
        scene_sample("a", ("sport", "sport", "show"), ["sport"]),
        scene_sample("b", ("real_danger", "sport", "cant_tell"), ["sport"]),
        scene_sample("c", ("show", "show", "video_game"), ["sport", "show"]),
        scene_sample("d", ("video_game", "video_game", "real_danger"), ["video_game"], category="video_games"),
        make_sample("e", ["benign"] * 3, frames=["sport"]),  # no scene labels: not in the matrix
    ]
    matrix = frame_confusion(samples)
    assert matrix == {
        "sports_fitness": {"rows": {"sport": {"cant_tell": 1, "real_danger": 1, "show": 1, "sport": 3},
                                    "sport+show": {"show": 2, "video_game": 1}},
                           "n": 9, "real_danger": 1, "identified": 5, "real_danger_share": 0.1111,
                           "identified_share": 0.5556},
        "video_games": {"rows": {"video_game": {"real_danger": 1, "video_game": 2}}, "n": 3, "real_danger": 1,
                        "identified": 2, "real_danger_share": 0.3333, "identified_share": 0.6667}}


def test_an_arm_whose_labels_hardly_vary_is_said_in_words() -> None:
    """19 of 20 labels agree: alpha is computable (0.000) but rests on one unit, and the bootstrap resamples
    mostly miss it ([-0.118, 0.000]). The file keeps the numbers; the terminal says what they mean."""
    from validation.statistics import _alpha_line, krippendorff_alpha

    rows = [(f"u{i}", f"a{k}", "harmful") for i in range(10) for k in range(2)]
    rows[0] = ("u0", "a0", "benign")
    entry = krippendorff_alpha(rows, n_boot=1000).to_dict()
    assert (entry["alpha"], entry["ci95"]) == (0.0, [-0.1176, 0.0])  # as before
    assert entry["variation"] == {"label": "harmful", "count": 19, "of": 20, "units_with_other_labels": 1}
    line = _alpha_line("speech arm", entry)
    assert line.strip() == ("speech arm               alpha not informative: almost no variation (19 of 20 labels "
                            "are 'harmful'; the other 1 on 1 unit)")
    assert "0.000" not in line and "[" not in line
    rows[4] = ("u2", "a0", "benign")  # dissent on 3 units: a number again
    rows[8] = ("u4", "a0", "benign")
    assert "0." in _alpha_line("speech arm", krippendorff_alpha(rows, n_boot=100).to_dict())
    assert _alpha_line("x", krippendorff_alpha([("u1", "a", "h"), ("u2", "b", "h")], n_boot=10).to_dict()).endswith(
        "alpha undefined: no unit has labels from 2+ annotators")


def test_round_one_of_a_staged_run_says_which_arms_have_no_labels(tmp_path: Path, capsys) -> None:
    """Only the speech arm is labelled: no all-n/a table, a sentence naming the arms without labels."""
    ws = Workspace(tmp_path / "ws")
    (ws.root / "annotation.json").write_text(json.dumps({"staged": True}))
    speech = [("harmful", "harmful"), ("harmful", "not_harmful"), ("harmful", "harmful"), ("harmful", "harmful")]
    ws.write_manifest("annotated", [
        make_sample(f"aor-{i}", []).model_copy(update={"annotations": [
            Annotation(annotator=f"ann{k}", arm="speech", label=label) for k, label in enumerate(labels)]})
        for i, labels in enumerate(speech)])
    code, out, err = run_cli(["--workspace", str(ws.root), "--n-boot", "20"], capsys)
    assert code == 0, err
    assert "n/a" not in out and "Krippendorff's alpha (nominal), labels" not in out
    assert "mixture arm: no labels yet, so no agreement table" in out
    assert ("no labels yet in the scene and mixture arms (staged: a sample's scene is pushed once its speech arm "
            "passed, its mixture once both passed)") in out
    assert "  speech arm               alpha not informative: almost no variation (7 of 8 labels are 'harmful'" in out
    report = json.loads((ws.root / "reports" / "agreement.json").read_text())
    assert report["arms"]["scene"]["n_ratings"] == 0 and report["overall"]["alpha"] is None  # the file as before
