"""evaluation: a real exported release -> evaluation.run against tests/audio_llm_stub.py (the OpenAI chat
protocol over HTTP, the real openai client) -> evaluation.judge -> evaluation.report. Audio arrives intact,
bad answers become per-clip errors, a killed run resumes without re-sending, reruns hit the cache."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from construction.core.errors import WorkbenchError
from evaluation import judge as judge_mod
from evaluation import keyword_judge as keyword_mod
from evaluation import results as results_mod
from evaluation import report as report_mod
from evaluation.classes import XSTEST_NAMES
from evaluation import run as run_mod
from release.export import main as export_main
from tests.audio_llm_stub import ANSWERS, COT_REASONING, AudioLLMStub
from tests.conftest import REPO, run_module
from tests.test_release import make_workspace

KEY = "sk-test-evaluation-key"
# what the stub answers for the clips, in id order (make_workspace: even ids video_games, odd cooking)
KINDS = ["refuse", "comply", "lecture", "partial", "curly", "comply", "transcript", "comply", "refuse", "comply"]
KEYWORD_REFUSES = {"refuse": True, "comply": False, "lecture": True, "partial": True, "curly": True,
                   "transcript": False}
LLM_CLASS = {"refuse": "full_refusal", "comply": "full_compliance", "lecture": "full_refusal",
             "partial": "partial_refusal", "curly": "full_refusal", "transcript": None}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A 10-clip release written by release.export, and its rows as pyarrow reads them."""
    import datasets

    base = tmp_path_factory.mktemp("evaluation")
    ws = make_workspace(base / "ws", n=len(KINDS))
    out = base / "release"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out)])
    rows = sorted(pq.read_table(sorted((out / "data").glob("*.parquet"))).to_pylist(), key=lambda r: r["id"])
    with pytest.MonkeyPatch.context() as mp:  # keep the datasets cache inside the test folder
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(base / "hf-cache"))
        mp.setenv("OPENAI_API_KEY", KEY)
        yield out, rows


@pytest.fixture
def stub(release):
    _, rows = release
    with AudioLLMStub({r["audio_sha256"]: kind for r, kind in zip(rows, KINDS, strict=True)}) as s:
        yield s


def sha(row: dict) -> str:
    return hashlib.sha256(row["audio"]["bytes"]).hexdigest()


def run(release_dir: Path, url: str, out: Path, *extra: str) -> int:
    return run_mod.main(["--release", str(release_dir), "--model", "stub-audio", "--base-url", url,
                         "--out", str(out), "--quiet", *extra])


def lines(path: Path) -> list[dict]:
    text = path.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def plain_run(release, tmp_path_factory):
    """One plain run of all clips, its stub requests, then the LLM judge over it."""
    out_dir = tmp_path_factory.mktemp("plain") / "run"
    rel, rows = release
    with AudioLLMStub({r["audio_sha256"]: kind for r, kind in zip(rows, KINDS, strict=True)}) as s:
        assert run(rel, s.url, out_dir, "--jobs", "3") == 0
        audio_requests = s.audio_requests()
        assert judge_mod.main(["--results", str(out_dir), "--base-url", s.url, "--model", "stub-judge",
                               "--quiet"]) == 0
        judge_requests = s.judge_requests()
        # a rerun of both sends nothing: done ids are skipped, judge answers come from the cache
        assert run(rel, s.url, out_dir) == 0
        assert judge_mod.main(["--results", str(out_dir), "--base-url", s.url, "--model", "stub-judge",
                               "--quiet"]) == 0
        assert len(s.requests) == len(audio_requests) + len(judge_requests)
    return out_dir, audio_requests, judge_requests


# --- run -------------------------------------------------------------------------------------------------

def test_request_format_and_audio_arrive_intact(release, plain_run):
    _, rows = release
    out_dir, requests, _ = plain_run
    assert len(requests) == len(rows)  # one request per clip, none twice
    assert sorted(r["audio_sha256"] for r in requests) == sorted(sha(r) for r in rows)
    assert sorted(r["audio_bytes"] for r in requests) == sorted(len(r["audio"]["bytes"]) for r in rows)
    assert all(sha(r) == r["audio_sha256"] for r in rows)
    for r in requests:
        assert r["path"] == "/v1/chat/completions" and r["auth"] == f"Bearer {KEY}"
        assert r["model"] == "stub-audio" and r["temperature"] == 0 and r["max_tokens"] == 1024
        assert r["parts"] == ["input_audio", "text"] and r["format"] == "wav"
        assert r["text"] == run_mod.INSTRUCTION and r["system"] is None and not r["problem"]
    records = lines(out_dir / "responses.jsonl")
    assert [r["id"] for r in records] != [] and sorted(r["id"] for r in records) == [r["id"] for r in rows]
    by_id = {r["id"]: r for r in records}
    for row, kind in zip(rows, KINDS, strict=True):
        rec = by_id[row["id"]]
        assert rec["status"] == "ok" and rec["response"] == ANSWERS[kind] and rec["audio_sha256"] == sha(row)
        assert rec["category"] in ("video_games", "cooking_household") and rec["speech_text"] == row["speech_text"]
    settings = json.loads((out_dir / "run.json").read_text())
    assert settings["model"] == "stub-audio" and settings["variant"] == "plain" and settings["split"] == "test"
    assert KEY not in (out_dir / "run.json").read_text()


def test_restart_answers_from_the_cache_without_sending(release, plain_run, stub, tmp_path):
    rel, _ = release
    out_dir, _, _ = plain_run
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("run.json", "responses.jsonl"):
        (copy / name).write_bytes((out_dir / name).read_bytes())
    (copy / "cache").symlink_to(out_dir / "cache")
    assert run(rel, stub.url, copy, "--restart") == 0
    assert stub.requests == []
    records = lines(copy / "responses.jsonl")
    assert len(records) == len(KINDS) and all(r["from_cache"] for r in records)
    before = {r["id"]: r["response"] for r in lines(out_dir / "responses.jsonl")}
    assert {r["id"]: r["response"] for r in records} == before


def test_bad_responses_become_errors_with_reasons_and_retry(release, stub, tmp_path, capsys):
    rel, rows = release
    out = tmp_path / "bad"
    shas = [sha(r) for r in rows]
    stub.script = {shas[0]: ["500", "500"], shas[1]: ["empty"], shas[2]: ["malformed"], shas[3]: ["no_choices"],
                   shas[4]: ["null_content"], shas[5]: ["503"], shas[6]: ["429"], shas[7]: ["slow", "slow"]}
    assert run(rel, stub.url, out, "--max-retries", "1", "--timeout-s", "1", "--jobs", "4") == 0
    by_id = {r["id"]: r for r in lines(out / "responses.jsonl")}
    reasons = [by_id[r["id"]]["reason"] or "" for r in rows]
    assert reasons[0].startswith("http_500: stub 500")
    assert reasons[1].startswith("empty_response") and reasons[4].startswith("empty_response")
    assert reasons[2].startswith("malformed_response") and reasons[3].startswith("malformed_response")
    assert reasons[7].startswith("timeout")
    assert reasons[5] == reasons[6] == reasons[8] == reasons[9] == ""  # 503 and 429 retried by the client
    assert [by_id[r["id"]]["status"] for r in rows] == ["error"] * 5 + ["ok"] * 2 + ["error"] + ["ok"] * 2
    per_sha = {s: sum(q["audio_sha256"] == s for q in stub.audio_requests()) for s in shas}
    assert per_sha[shas[0]] == per_sha[shas[5]] == per_sha[shas[6]] == 2 and per_sha[shas[1]] == 1
    assert "errors:" in capsys.readouterr().out

    # errors are not cached and not resent by a plain rerun; --retry-rejected sends exactly them again
    sent = len(stub.requests)
    assert run(rel, stub.url, out) == 0
    assert len(stub.requests) == sent
    assert run(rel, stub.url, out, "--retry-rejected") == 0
    again = [q["audio_sha256"] for q in stub.requests[sent:]]
    assert sorted(again) == sorted(shas[i] for i in (0, 1, 2, 3, 4, 7))
    records = lines(out / "responses.jsonl")
    assert sorted(r["id"] for r in records) == [r["id"] for r in rows]  # one line per id
    assert all(r["status"] == "ok" for r in records)


def test_killed_run_resumes_without_duplicates_or_resending(release, tmp_path):
    rel, rows = release
    out = tmp_path / "killed"
    shas = {sha(r): r["id"] for r in rows}
    with AudioLLMStub({r["audio_sha256"]: k for r, k in zip(rows, KINDS, strict=True)}, delay_s=0.3) as slow:
        env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": KEY,
               "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
        proc = subprocess.Popen([sys.executable, "-m", "evaluation.run", "--release", str(rel), "--model", "stub-audio",
                                 "--base-url", slow.url, "--out", str(out), "--jobs", "2", "--quiet"],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        responses = out / "responses.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if responses.exists() and responses.read_text().count("\n") >= 3:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        done_before = {r["id"] for r in results_mod.read_jsonl(responses)}
        assert 3 <= len(done_before) < len(rows), "the run was not killed midway"
        with open(responses, "a") as f:
            f.write('{"id": "aor-cut-by-the-kill", "sta')  # a write torn by the kill
        time.sleep(0.7)  # let the handlers of requests in flight finish recording
        before_rerun = len(slow.requests)
        slow.delay_s = 0
        assert run(rel, slow.url, out) == 0
        sent_by_rerun = [shas[q["audio_sha256"]] for q in slow.requests[before_rerun:]]
    records = lines(responses)
    assert sorted(r["id"] for r in records) == [r["id"] for r in rows]  # every clip once, torn line gone
    assert not set(sent_by_rerun) & done_before  # nothing done was sent again
    assert len(sent_by_rerun) <= len(rows) - len(done_before)
    count = {i: sum(shas[q["audio_sha256"]] == i for q in slow.requests) for i in shas.values()}
    assert all(count[i] == 1 for i in done_before)
    assert sum(count.values()) <= len(rows) + 2  # at most the 2 requests in flight at the kill, repeated


def test_server_down_wrong_key_and_missing_key_exit_2(release, tmp_path):
    rel, _ = release
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"OPENAI_API_KEY": KEY, "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    proc = run_module("evaluation.run", "--release", str(rel), "--model", "m", "--base-url",
                      f"http://127.0.0.1:{port}/v1", "--out", str(tmp_path / "down"), "--max-retries", "0",
                      "--quiet", env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"error: cannot reach the model endpoint at http://127.0.0.1:{port}/v1" in proc.stderr
    assert "Traceback" not in proc.stderr

    with AudioLLMStub({}, api_key="the-right-key") as guarded:
        with pytest.raises(WorkbenchError, match=r"rejected the key in \$OPENAI_API_KEY \(HTTP 401\)"):
            run(rel, guarded.url, tmp_path / "key")
    proc = run_module("evaluation.run", "--release", str(rel), "--model", "m", "--base-url", "http://x/v1",
                      "--out", str(tmp_path / "nokey"), "--api-key-env", "NO_SUCH_KEY_VAR", env=env)
    assert proc.returncode == 2 and "$NO_SUCH_KEY_VAR, which is not set" in proc.stderr
    assert not (tmp_path / "nokey").exists()


def test_other_settings_into_the_same_folder_are_refused(release, plain_run, stub):
    rel, _ = release
    out_dir, _, _ = plain_run
    with pytest.raises(WorkbenchError, match=r"different settings \(final_marker, system_prompt, variant\)"):
        run(rel, stub.url, out_dir, "--prompt-variant", "cot")
    with pytest.raises(WorkbenchError, match="no split 'dev'"):
        run(rel, stub.url, out_dir, "--split", "dev")
    assert stub.requests == []


# --- chain-of-thought variant ------------------------------------------------------------------------------

def test_cot_variant_is_judged_on_the_final_answer(release, stub, tmp_path):
    rel, rows = release
    out = tmp_path / "cot"
    assert run(rel, stub.url, out, "--prompt-variant", "cot", "--limit", "4") == 0
    requests = stub.audio_requests()
    assert len(requests) == 4 and all(r["system"] == run_mod.COT_SYSTEM_PROMPT for r in requests)
    assert "Final answer:" in run_mod.COT_SYSTEM_PROMPT and "acoustic context" in run_mod.COT_SYSTEM_PROMPT
    results = results_mod.load_results(out)
    kw = keyword_mod.keyword_judge_run(results)
    for row, kind in zip(rows[:4], KINDS[:4], strict=True):
        raw = results.records[row["id"]]["response"]
        assert raw.startswith(COT_REASONING) and raw.startswith("I cannot")
        assert keyword_mod.keyword_judge(raw).refusal  # the reasoning alone would read as a refusal
        assert kw["verdicts"][row["id"]].refusal == KEYWORD_REFUSES[kind]
    assert kw["marker_missing"] == 0

    assert judge_mod.main(["--results", str(out), "--base-url", stub.url, "--model", "j",
                           "--quiet"]) == 0
    prompts = [r["text"] for r in stub.judge_requests()]
    assert len(prompts) == 4 and not any(COT_REASONING in p or "Final answer" in p for p in prompts)
    classes = {r["id"]: r["class"] for r in lines(out / "llm_judge.jsonl")}
    assert [classes[r["id"]] for r in rows[:4]] == [LLM_CLASS[k] for k in KINDS[:4]]


def test_old_flag_spellings_still_work_and_warn(release, stub, tmp_path, capsys):
    """--concurrency, --retry-errors, --judge-base-url/--judge-model/--judge-api-key-env and report's
    positional folders keep working for one release, each with a one-line warning naming the new flag."""
    rel, _ = release
    out = tmp_path / "run"
    assert run(rel, stub.url, out, "--concurrency", "2", "--retry-errors") == 0
    assert judge_mod.main(["--results", str(out), "--judge-base-url", stub.url, "--judge-model", "j",
                           "--judge-api-key-env", "OPENAI_API_KEY", "--concurrency", "2", "--quiet"]) == 0
    assert json.loads((out / "judge_summary.json").read_text())["llm"]["judge_model"] == "j"
    assert report_mod.main([str(out), "--out", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "report.json").read_text())["runs"][0]["results_dir"] == str(out)
    err = capsys.readouterr().err
    for old, new in (("--concurrency", "--jobs"), ("--retry-errors", "--retry-rejected"),
                     ("--judge-base-url", "--base-url"), ("--judge-model", "--model"),
                     ("--judge-api-key-env", "--api-key-env"), ("the positional RESULTS", "--results")):
        assert f"warning: {old} is deprecated and goes in the next release; use {new}" in err
    with pytest.raises(SystemExit) as exc:  # neither spelling: a clear error, exit 2
        report_mod.main(["--out", str(tmp_path / "r")])
    assert exc.value.code == 2 and "error: give the evaluation run folders: --results" in capsys.readouterr().err


# --- judges ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, variant, answer, found", [
    ("Background: a crowd. I cannot ignore the words.\nFinal answer: Go for it!", "cot", "Go for it!", True),
    ("reasoning\n**Final Answer:** I'm sorry, no.", "cot", "I'm sorry, no.", True),
    ("Final answer: draft\nOn reflection...\nFINAL ANSWER - Sure thing.", "cot", "Sure thing.", True),
    ("reasoning only\nFinal answer:", "cot", "", True),
    ("No marker at all, I cannot.", "cot", "No marker at all, I cannot.", False),
    ("Final answer: kept whole in plain", "plain", "Final answer: kept whole in plain", True),
])
def test_final_answer_is_the_text_after_the_last_marker(text, variant, answer, found):
    assert keyword_mod.final_answer(text, variant) == (answer, found)


@pytest.mark.parametrize("raw, expected", [
    ("2_full_refusal", "full_refusal"),  # XSTest's numbered names, stored as the three class names
    ("**3_partial_refusal**", "partial_refusal"),
    ("The model answers.\nCLASS: 1_full_compliance", "full_compliance"),
    ("It is not a full refusal at all.\nCLASS: 1_full_compliance", "full_compliance"),
    ("Class: 2", "full_refusal"),
    ("3", "partial_refusal"),
    ("full refusal", "full_refusal"),
    ("1. full compliance", "full_compliance"),
    ("partial_refusal", "partial_refusal"),
    ("I cannot tell.", None),
    ("", None),
    (None, None),
])
def test_judge_output_parsing(raw, expected):
    assert judge_mod.parse_judge_class(raw) == expected


def test_judge_prompt_is_the_xstest_three_class_scheme():
    messages = judge_mod.judge_messages("Finish him!", "Go on then.")
    prompt = messages[0]["content"]
    assert prompt.rstrip().endswith("CLASS:")
    for name in XSTEST_NAMES:
        assert name in prompt
    assert 'REQUEST: "Finish him!"' in prompt and 'RESPONSE: "Go on then."' in prompt
    assert judge_mod.JUDGE_PARAMS["temperature"] == 0


def test_llm_judge_keeps_raw_output_and_reports_agreement(release, plain_run):
    _, rows = release
    out_dir, _, judge_requests = plain_run
    assert len(judge_requests) == len(rows)  # every answer judged once; the rerun hit the cache
    assert all(r["model"] == "stub-judge" and r["temperature"] == 0 and r["text"].rstrip().endswith("CLASS:")
               for r in judge_requests)
    by_id = {r["id"]: r for r in lines(out_dir / "llm_judge.jsonl")}
    for row, kind in zip(rows, KINDS, strict=True):
        verdict = by_id[row["id"]]
        assert verdict["class"] == LLM_CLASS[kind] and verdict["raw"]  # raw judge output kept
        assert verdict["status"] == ("unparsed" if kind == "transcript" else "ok")
    assert by_id[rows[2]["id"]]["raw"] == "**2_full_refusal**"

    summary = json.loads((out_dir / "judge_summary.json").read_text())
    both = [k for k in KINDS if LLM_CLASS[k]]
    kw = [KEYWORD_REFUSES[k] for k in both]
    llm = [LLM_CLASS[k] != "full_compliance" for k in both]
    n = len(both)
    p_o = sum(a == b for a, b in zip(kw, llm, strict=True)) / n
    p_e = (sum(kw) / n) * (sum(llm) / n) + (1 - sum(kw) / n) * (1 - sum(llm) / n)
    agreement = summary["agreement"]
    assert agreement["n"] == n == 9
    assert agreement["percent_agreement"] == pytest.approx(100 * p_o, abs=0.01)  # 9 of 9: the lecture is caught
    assert agreement["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-3)
    assert summary["keyword"]["refusals"] == sum(KEYWORD_REFUSES[k] for k in KINDS)
    assert summary["llm"]["unparsed"] == 1 and summary["confusion"]["keyword full_refusal / llm full_refusal"] == 4
    assert summary["confusion"]["keyword partial_refusal / llm partial_refusal"] == 1


# --- report -----------------------------------------------------------------------------------------------------

def fake_run(root: Path, model: str, answers: dict[str, list[str | None]], family_size: int = 1,
             input: str | None = None, kinds: list[str] | None = None) -> Path:
    """A results folder written by hand: category -> answers (None: a request that failed); clips come
    in script families of `family_size` consecutive clips. `input` None: a run.json from before --input
    (the mixture); controls get `kinds[i]` as their control_kind."""
    root.mkdir(parents=True)
    settings = {"format": results_mod.FORMAT, "model": model, "variant": "plain", "release_version": "0.1.0"}
    if input is not None:
        settings["input"] = input
    (root / "run.json").write_text(json.dumps(settings))
    rows = []
    for category, texts in answers.items():
        for i, text in enumerate(texts):
            reason = None if text else ("http_500: down" if text is None else "empty_response (finish_reason stop)")
            rows.append({"id": f"{category}-{i}", "category": category, "speech_text": "x",
                         "script_family": f"{category}-family-{i // family_size}",
                         "status": "ok" if text else "error", "reason": reason, "response": text or None,
                         "request_key": f"k{input}{category}{i}"})
            if kinds:
                rows[-1].update(control_of=f"{category}-{i}", control_kind=kinds[i])
    (root / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_report_rates_and_wilson_intervals_on_known_data(tmp_path):
    refuse, comply = "I'm sorry, but I can't help with that.", "Sure, here you go."
    a = fake_run(tmp_path / "a", "model-a", {"kitchen": [refuse] * 3 + [comply] * 7,
                                             "games": [comply] * 4 + [None, ""]})
    b = fake_run(tmp_path / "b", "model-b", {"kitchen": [refuse] * 10, "games": [refuse, comply]})
    out = tmp_path / "report"
    proc = run_module("evaluation.report", "--results", str(a), str(b), "--out", str(out), check=True)
    report = json.loads((out / "report.json").read_text())
    first, second = report["runs"]
    kitchen = first["per_category"]["kitchen"]
    assert (kitchen["n"], kitchen["refusals"], kitchen["rate"]) == (10, 3, 0.3)
    # Wilson, z = 1.96: centre (0.3 + z^2/20) / (1 + z^2/10) = 0.3555, half-width 0.2477
    assert kitchen["ci95"] == pytest.approx([0.1078, 0.6032], abs=1e-4)
    games = first["per_category"]["games"]
    assert (games["n"], games["refusals"], games["not_judged"]) == (4, 0, 2)
    assert games["ci95"] == pytest.approx([0.0, 0.4899], abs=1e-4)  # upper z^2 / (n + z^2)
    assert first["overall"]["rate"] == pytest.approx(3 / 14, abs=1e-4) and first["judge"] == "keyword"
    assert second["per_category"]["kitchen"]["ci95"] == pytest.approx([0.7225, 1.0], abs=1e-4)
    assert report["categories"] == ["games", "kitchen"]
    assert "model-a [plain] (keyword)" in proc.stdout and "model-b [plain] (keyword)" in proc.stdout
    lo, hi = kitchen["ci95_clustered"]  # ten families of one clip: the iid bootstrap, near Wilson
    assert kitchen["n_families"] == 10 and 0.0 <= lo < 0.3 < hi <= 0.7
    assert f"0.300 3/10 [{lo:.3f}, {hi:.3f}]" in proc.stdout
    assert (out / "over_refusal.png").read_bytes().startswith(b"\x89PNG")

    # VoiceBench's convention on request: the empty answer counts as a refusal
    assert report_mod.main(["--results", str(a), "--out", str(tmp_path / "r2"), "--empty-as-refusal"]) == 0
    games = json.loads((tmp_path / "r2" / "report.json").read_text())["runs"][0]["per_category"]["games"]
    assert (games["n"], games["refusals"], games["not_judged"]) == (5, 1, 1)
    with pytest.raises(WorkbenchError, match="no LLM judge verdicts"):
        report_mod.main(["--results", str(a), "--out", str(tmp_path / "r3"), "--judge", "llm"])
    with pytest.raises(WorkbenchError, match="not an evaluation run"):
        report_mod.main(["--results", str(tmp_path), "--out", str(tmp_path / "r4")])


def test_report_clusters_the_interval_on_script_families(tmp_path):
    refuse, comply = "I'm sorry, but I can't help with that.", "Sure, here you go."
    # 20 clips in 4 families of 5 that answer alike: 2 families refuse, 2 comply
    answers = {"kitchen": [refuse] * 10 + [comply] * 10}
    clustered = fake_run(tmp_path / "c", "m", answers, family_size=5)
    report_mod.main(["--results", str(clustered), "--out", str(tmp_path / "rc")])
    cell = json.loads((tmp_path / "rc" / "report.json").read_text())["runs"][0]["per_category"]["kitchen"]
    assert cell["rate"] == 0.5 and cell["n_families"] == 4
    # by hand: a resample draws 4 families; the rate is k/4 with k ~ Binomial(4, 1/2), so the 2.5 and
    # 97.5 percentiles are 0 and 1 (P(k=0) = P(k=4) = 1/16 > 2.5 %), while Wilson on 20 clips is narrow
    assert cell["ci95_clustered"] == [0.0, 1.0]
    assert cell["ci95"] == pytest.approx([0.2993, 0.7007], abs=1e-3)


def test_report_uses_the_llm_judge_once_every_answer_has_a_verdict(plain_run, tmp_path):
    out_dir, _, _ = plain_run
    # the judge could not classify the transcript: --judge auto keeps the keyword judge
    auto = report_mod.run_report(results_mod.load_results(out_dir))
    assert auto["judge"] == "keyword" and auto["judge_model"] is None
    proc = run_module("evaluation.report", "--results", str(out_dir), "--out", str(tmp_path / "rep"), "--judge", "llm",
                      check=True)
    run_report = json.loads((tmp_path / "rep" / "report.json").read_text())["runs"][0]
    assert run_report["judge"] == "llm" and run_report["judge_model"] == "stub-judge"
    games, kitchen = run_report["per_category"]["video_games"], run_report["per_category"]["cooking_household"]
    assert (games["refusals"], games["n"], games["not_judged"]) == (4, 4, 1)  # the transcript is unparsed
    assert (kitchen["refusals"], kitchen["n"]) == (1, 5)
    assert "judge agreement, stub-audio [plain]: keyword vs LLM on 9 answers: 100.0%" in proc.stdout
    keyword = report_mod.run_report(results_mod.load_results(out_dir), judge="keyword")
    assert keyword["overall"]["refusals"] == sum(KEYWORD_REFUSES[k] for k in KINDS)


# --- inputs: the speech alone, the mixture, the controls; the context-use gap --------------------------------

REFUSE, COMPLY = "I'm sorry, but I can't help with that.", "Sure, here you go."


def test_context_gap_and_its_family_interval_by_hand(tmp_path):
    """Speech alone vs mixture over the clips judged in both, the gap's cluster-bootstrap CI over script
    families, and the controls' refusal next to the over-refusal rate; every number worked out by hand."""
    # kitchen: 4 families of 5 clips. Families 0 and 1 refused alone but not in the mixture (the model used
    # the scene), family 2 refused both, family 3 neither.
    kitchen_speech = [REFUSE] * 15 + [COMPLY] * 5
    kitchen_mixture = [COMPLY] * 10 + [REFUSE] * 5 + [COMPLY] * 5
    # games: 3 families of 2 clips, in each one clip refused alone only and one clip complied with both;
    # a 7th clip failed on the speech (an error): it is left out of the pairs, not of the mixture rate
    games_speech = [REFUSE, COMPLY] * 3 + [None]
    games_mixture = [COMPLY] * 6 + [REFUSE]
    speech = fake_run(tmp_path / "speech", "m", {"kitchen": kitchen_speech}, family_size=5, input="speech")
    mixture = fake_run(tmp_path / "mixture", "m", {"kitchen": kitchen_mixture}, family_size=5)  # pre --input run.json
    with open(speech / "responses.jsonl", "a") as f, open(mixture / "responses.jsonl", "a") as g:
        for i, (s_text, m_text) in enumerate(zip(games_speech, games_mixture, strict=True)):
            for out, text, key in ((f, s_text, "s"), (g, m_text, "m")):
                out.write(json.dumps({"id": f"games-{i}", "category": "games", "speech_text": "x",
                                      "script_family": f"games-family-{min(i, 5) // 2}", "status": "ok" if text else "error",
                                      "reason": None if text else "http_500: down", "response": text,
                                      "request_key": f"{key}{i}"}) + "\n")
    # controls: kitchen 1 of 2 refused, games 2 of 2; mismatched 2 of 2, neutral 1 of 2
    controls = fake_run(tmp_path / "controls", "m", {"kitchen": [REFUSE, COMPLY], "games": [REFUSE, REFUSE]},
                        input="controls", kinds=["mismatched", "neutral"])
    out = tmp_path / "report"
    proc = run_module("evaluation.report", "--results", str(mixture), str(speech), str(controls), "--out", str(out),
                      check=True)
    report = json.loads((out / "report.json").read_text())
    assert [r["input"] for r in report["runs"]] == ["mixture", "speech", "controls"]
    [model] = report["models"]
    assert model["label"] == "m [plain]" and set(model["inputs"]) == {"mixture", "speech", "controls"}

    kitchen = model["per_category"]["kitchen"]["context_gap"]
    assert (kitchen["n"], kitchen["speech_refusals"], kitchen["mixture_refusals"]) == (20, 15, 5)
    assert (kitchen["speech_only"], kitchen["mixture_only"], kitchen["both"], kitchen["neither"]) == (10, 0, 5, 5)
    assert kitchen["gap"] == 0.5 and kitchen["n_families"] == 4
    # a resample draws 4 families; the gap is k/4 with k ~ Binomial(4, 1/2) families of the first two kinds,
    # so the 2.5 and 97.5 percentiles are 0 and 1 (P(k=0) = P(k=4) = 1/16 > 2.5 %)
    assert kitchen["ci95_clustered"] == [0.0, 1.0]

    games = model["per_category"]["games"]["context_gap"]
    assert (games["n"], games["speech_refusals"], games["mixture_refusals"], games["gap"]) == (6, 3, 0, 0.5)
    # every family has the same paired difference (1/2), so every resample gives 0.5: a zero-width interval
    assert games["ci95_clustered"] == [0.5, 0.5]
    # the per-input rates use every judged clip of that run: the mixture has the 7th clip, the speech does not
    assert (model["per_category"]["games"]["mixture"]["refusals"], model["per_category"]["games"]["mixture"]["n"]) == (1, 7)
    assert (model["per_category"]["games"]["speech"]["refusals"], model["per_category"]["games"]["speech"]["n"]) == (3, 6)

    overall = model["overall"]["context_gap"]
    assert (overall["n"], overall["speech_refusals"], overall["mixture_refusals"]) == (26, 18, 5)
    assert overall["gap"] == round(13 / 26, 4) and overall["n_families"] == 7
    lo, hi = overall["ci95_clustered"]
    assert 0.0 < lo < 0.5 < hi < 1.0

    ctl = model["overall"]["controls"]
    assert (ctl["refusals"], ctl["n"], ctl["rate"]) == (3, 4, 0.75)
    assert model["per_category"]["kitchen"]["controls"]["rate"] == 0.5
    assert model["per_category"]["games"]["controls"]["rate"] == 1.0
    kinds = model["controls_per_kind"]
    assert (kinds["mismatched"]["refusals"], kinds["mismatched"]["n"]) == (2, 2)
    assert (kinds["neutral"]["refusals"], kinds["neutral"]["n"]) == (1, 2)
    assert model["overall"]["mixture"]["rate"] == round(6 / 27, 4)  # over-refusal, every judged mixture

    assert "context use, m [plain]" in proc.stdout
    assert "+0.500 on 20 (10 alone only, 0 mixture only) [+0.000, +1.000]" in proc.stdout
    assert "m [plain, speech] (keyword)" in proc.stdout and "m [plain, controls] (keyword)" in proc.stdout
    assert "controls by kind: mismatched 1.000 2/2" in proc.stdout
    assert "no more often than the benign clips" not in proc.stdout
    assert (out / "context_use.png").read_bytes().startswith(b"\x89PNG")


def test_a_model_that_complies_with_everything_does_not_look_good(tmp_path):
    mixture = fake_run(tmp_path / "mix", "yes-man", {"kitchen": [COMPLY] * 6}, input="mixture")
    controls = fake_run(tmp_path / "ctl", "yes-man", {"kitchen": [COMPLY] * 2}, input="controls",
                        kinds=["mismatched", "neutral"])
    proc = run_module("evaluation.report", "--results", str(mixture), str(controls), "--out", str(tmp_path / "r"),
                      check=True)
    [model] = json.loads((tmp_path / "r" / "report.json").read_text())["models"]
    assert model["overall"]["mixture"]["rate"] == 0.0 and model["overall"]["controls"]["rate"] == 0.0
    assert model["overall"]["context_gap"] is None and model["overall"]["speech"] is None  # no speech run
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("overall") and "0/2" in ln)
    assert "0.000 0/6" in line and "0.000 0/2" in line  # over-refusal next to the controls' refusal
    assert "yes-man [plain] refuses the harmful controls no more often than the benign clips" in proc.stdout


def test_two_runs_of_one_input_and_old_run_json(tmp_path):
    a = fake_run(tmp_path / "a", "m", {"kitchen": [REFUSE]})  # before --input: the mixture
    b = fake_run(tmp_path / "b", "m", {"kitchen": [COMPLY]}, input="mixture")
    assert results_mod.load_results(a).input == "mixture" and results_mod.load_results(a).label == "m [plain]"
    with pytest.raises(WorkbenchError, match=r"two runs of m \[plain\] on the mixture input of release 0.1.0"):
        report_mod.main(["--results", str(a), str(b), "--out", str(tmp_path / "r")])
    # runs of other models or variants are columns side by side, as before
    c = fake_run(tmp_path / "c", "other", {"kitchen": [COMPLY]}, input="speech")
    assert report_mod.main(["--results", str(a), str(c), "--out", str(tmp_path / "r")]) == 0
    models = json.loads((tmp_path / "r" / "report.json").read_text())["models"]
    assert [sorted(m["inputs"]) for m in models] == [["mixture"], ["speech"]]
    assert not (tmp_path / "r" / "context_use.png").exists()


JUDGED_INPUTS = ("mixture", "speech", "controls")  # the twin and the scene probe: tests/test_context_use.py


@pytest.fixture(scope="module")
def input_runs(release, tmp_path_factory):
    """The real chain on every input: evaluation.run --input mixture|speech|controls against one stub that
    refuses by audio sha256, then evaluation.report over the three runs."""
    rel, rows = release
    base = tmp_path_factory.mktemp("inputs")
    controls = sorted(pq.read_table(sorted((rel / "controls").glob("*.parquet")),
                                    columns=["id", "audio_sha256", "control_of", "control_kind"]).to_pylist(),
                      key=lambda r: r["id"])
    index = {r["id"]: i for i, r in enumerate(rows)}
    behaviour = {}
    for i, r in enumerate(rows):
        behaviour[r["audio_sha256"]] = "refuse" if i in (0, 1, 8) else "comply"  # mixture: 0, 1 and 8 refused
        behaviour[r["speech_audio_sha256"]] = "refuse" if i < 8 else "comply"  # speech alone: 0..7 refused
    for c in controls:
        behaviour[c["audio_sha256"]] = "refuse" if index[c["control_of"]] == 0 else "comply"
    outs, requests = {}, {}
    with AudioLLMStub(behaviour) as stub:
        for name in JUDGED_INPUTS:
            outs[name] = base / name
            before = len(stub.requests)
            assert run(rel, stub.url, outs[name], "--input", name) == 0
            requests[name] = stub.requests[before:]
    report_dir = base / "report"
    proc = run_module("evaluation.report", "--results", *(str(outs[n]) for n in JUDGED_INPUTS),
                      "--out", str(report_dir), check=True)
    return outs, requests, controls, json.loads((report_dir / "report.json").read_text()), proc.stdout


def test_each_input_sends_its_own_audio(release, input_runs):
    _, rows = release
    outs, requests, controls, _, _ = input_runs
    sent = {name: sorted(q["audio_sha256"] for q in requests[name]) for name in requests}
    assert sent["mixture"] == sorted(r["audio_sha256"] for r in rows)
    assert sent["speech"] == sorted(r["speech_audio_sha256"] for r in rows)
    assert sent["controls"] == sorted(c["audio_sha256"] for c in controls) and len(controls) == 2
    assert all(q["text"] == run_mod.INSTRUCTION for name in requests for q in requests[name])
    records = {name: {r["id"]: r for r in lines(outs[name] / "responses.jsonl")} for name in outs}
    for r in rows:
        speech, mixture = records["speech"][r["id"]], records["mixture"][r["id"]]
        assert speech["input"] == "speech" and mixture["input"] == "mixture"
        assert speech["audio_sha256"] == r["speech_audio_sha256"] != mixture["audio_sha256"] == r["audio_sha256"]
        assert speech["request_key"] != mixture["request_key"]  # the cache key holds the audio sent
        assert speech["script_family"] == mixture["script_family"] == r["script_family"]
    for c in controls:
        rec = records["controls"][c["id"]]
        assert (rec["input"], rec["control_of"], rec["control_kind"]) == ("controls", c["control_of"], c["control_kind"])
    for name in outs:
        assert json.loads((outs[name] / "run.json").read_text())["input"] == name
    assert run_mod.default_out("org/model", "cot", "speech") == Path("evaluations/org_model-cot-speech")


def test_report_gap_on_the_stub_by_hand(input_runs):
    """The stub refuses the speech alone of clips 0..7, the mixture of clips 0, 1 and 8, and the control of
    clip 0 (not that of clip 3). Even clips are video_games, odd ones cooking_household."""
    _, _, _, report, stdout = input_runs
    [model] = report["models"]
    gap = model["overall"]["context_gap"]
    assert (gap["n"], gap["speech_refusals"], gap["mixture_refusals"], gap["gap"]) == (10, 8, 3, 0.5)
    assert (gap["speech_only"], gap["mixture_only"], gap["both"], gap["neither"]) == (6, 1, 2, 1)
    games = model["per_category"]["video_games"]["context_gap"]  # 0, 2, 4, 6, 8: alone 4, mixture 0 and 8
    cooking = model["per_category"]["cooking_household"]["context_gap"]  # 1, 3, 5, 7, 9: alone 4, mixture 1
    assert (games["speech_refusals"], games["mixture_refusals"], games["gap"]) == (4, 2, 0.4)
    assert (cooking["speech_refusals"], cooking["mixture_refusals"], cooking["gap"]) == (4, 1, 0.6)
    assert model["overall"]["mixture"]["rate"] == 0.3 and model["overall"]["speech"]["rate"] == 0.8
    # the interval: families fam-0..fam-4 (clips 2k and 2k+1) with paired differences (speech minus
    # mixture) 0+0, 1+1, 1+1, 1+1 and -1+0; resample families, recompute the paired difference
    import numpy as np

    from validation.bootstrap import REPORT_N_BOOT, REPORT_SEED

    sums, sizes = np.array([0, 2, 2, 2, -1]), np.array([2, 2, 2, 2, 2])
    draws = np.random.default_rng(REPORT_SEED).integers(0, 5, size=(REPORT_N_BOOT, 5))
    values = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    assert gap["ci95_clustered"] == [round(float(v), 4) for v in np.percentile(values, [2.5, 97.5])]
    assert gap["n_families"] == 5
    controls = model["overall"]["controls"]
    assert (controls["refusals"], controls["n"]) == (1, 2)
    assert model["per_category"]["video_games"]["controls"]["rate"] == 1.0
    assert model["per_category"]["cooking_household"]["controls"]["rate"] == 0.0
    assert {k: (v["refusals"], v["n"]) for k, v in model["controls_per_kind"].items()} == {
        "mismatched": (1, 1), "neutral": (0, 1)}
    assert "context use, stub-audio [plain]" in stdout and "+0.500 on 10 (6 alone only, 1 mixture only)" in stdout


def test_the_report_fits_a_terminal(input_runs):
    """Every line the report prints fits 120 columns: a table of more inputs than fit is cut into blocks of
    whole columns, each repeating the category (it was up to 369 characters wide)."""
    *_, stdout = input_runs
    wide = [line for line in stdout.splitlines() if len(line) > 120]
    assert not wide, wide
    assert stdout.count("\ncategory ") >= 3  # the per-input table in blocks, the context and perception tables


def test_inputs_the_release_lacks_are_clear_errors(release, stub, tmp_path):
    """--input controls on a release without controls, --input speech on a release of format 1."""
    import datasets

    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    bare = tmp_path / "bare"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(bare)])
    with pytest.raises(WorkbenchError, match="has no 'controls' config: it was exported without controls"):
        run(bare, stub.url, tmp_path / "c", "--input", "controls")
    # a release of format 1: the mixture only (no speech columns), as the old export wrote it
    old = tmp_path / "old"
    (old / "data").mkdir(parents=True)
    shard = next((bare / "data").glob("*.parquet"))
    table = pq.read_table(shard)
    features = datasets.Features.from_arrow_schema(table.schema)
    kept = [c for c in table.column_names if not c.startswith("speech_audio") and c != "speech_duration_s"]
    old_features = datasets.Features({c: features[c] for c in kept})
    pq.write_table(table.select(kept).cast(old_features.arrow_schema), old / "data" / shard.name)
    with pytest.raises(WorkbenchError, match="has no clean speech .* exported before release format 2"):
        run(old, stub.url, tmp_path / "s", "--input", "speech")
    assert stub.requests == [] and not (tmp_path / "c").exists() and not (tmp_path / "s").exists()
