# ruff: noqa: F811  (the release fixture comes from tests.test_evaluation)
"""evaluation: what a run stores and forwards, and what evaluation.judge and evaluation.report accept.

A key echoed in a normal answer is stored nowhere and never reaches the judge; an oversized answer is cut;
runs of two different exports are not paired; a hand-edited responses.jsonl is a clear error naming the
line; --judge auto needs an LLM verdict for every answer; `evaluation.judge --results evaluations/*` skips
folders that are not runs, and a run that failed before its first answer leaves no folder behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from construction.core.errors import WorkbenchError
from evaluation import endpoint as endpoint_mod
from evaluation import judge as judge_mod
from evaluation import results as results_mod
from evaluation import report as report_mod
from evaluation import run as run_mod
from tests.audio_llm_stub import AudioLLMStub, _completion, _error
from tests.conftest import REPO, run_module
from tests.test_evaluation import COMPLY, KINDS, REFUSE, fake_run, release  # noqa: F401 (a fixture)

SECRET = "plain-model-access-0123456789"  # not key-shaped, in a variable whose name does not look secret
JUDGE_SECRET = "plain-judge-access-9876543210"


class EchoStub(AudioLLMStub):
    """Answers every clip with the bearer token it got (a server that echoes the key in a 200 answer),
    padded to `pad` characters; the judge echoes its own token too. A model other than `model` is a 404."""

    def __init__(self, pad: int = 0, model: str = "stub-audio") -> None:
        super().__init__()
        self.pad, self.model = pad, model

    def handle(self, path: str, raw: bytes, auth: str):
        body = json.loads(raw)
        status, payload = super().handle(path, raw, auth)  # records the request
        if self.requests[-1]["kind"] == "judge":
            return 200, _completion(body["model"], f"1_full_compliance (you are {auth})")
        if body["model"] != self.model:
            return 404, _error(f"The model `{body['model']}` does not exist.", "model_not_found")
        return 200, _completion(body["model"], f"Sure. Your token is {auth}. " + "la " * self.pad)


def _all_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def test_an_echoed_key_is_stored_nowhere_and_not_forwarded_to_the_judge(release, tmp_path, monkeypatch):
    rel, _ = release
    monkeypatch.setenv("MODEL_ACCESS", SECRET)
    monkeypatch.setenv("JUDGE_ACCESS", JUDGE_SECRET)
    out = tmp_path / "run"
    with EchoStub(pad=20_000) as stub:
        assert run_mod.main(["--release", str(rel), "--model", "stub-audio", "--base-url", stub.url, "--out",
                             str(out), "--api-key-env", "MODEL_ACCESS", "--quiet"]) == 0
        assert all(r["auth"] == f"Bearer {SECRET}" for r in stub.audio_requests())  # the key was sent...
        assert judge_mod.main(["--results", str(out), "--base-url", stub.url, "--model", "j",
                               "--api-key-env", "JUDGE_ACCESS", "--quiet"]) == 0
        judge_prompts = [r["text"] for r in stub.judge_requests()]
    assert len(judge_prompts) == len(KINDS)
    assert all(SECRET not in p and "Your token is Bearer ***" in p for p in judge_prompts)  # ...and masked
    written = _all_text(out)  # responses.jsonl, the response and judge caches, llm_judge.jsonl, the summary
    assert SECRET not in written and JUDGE_SECRET not in written
    records = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    # one answer is cut at MAX_ANSWER_CHARS, and says so
    assert all(len(r["response"]) == endpoint_mod.MAX_ANSWER_CHARS and r["truncated"] for r in records)
    cached = [json.loads(p.read_text()) for p in (out / "cache" / "responses").glob("*.json")]
    assert len(cached) == len(KINDS) and all(len(c["text"]) == endpoint_mod.MAX_ANSWER_CHARS for c in cached)


def test_runs_of_two_exports_of_one_version_are_not_paired(release, tmp_path):
    rel, _ = release
    # one export: every input has the same samples fingerprint (the controls config included)
    prints = {name: run_mod.Release(str(rel), input=name).samples_fingerprint
              for name in ("mixture", "speech", "controls")}
    assert len(set(prints.values())) == 1
    mixture = fake_run(tmp_path / "m", "m", {"kitchen": [REFUSE, COMPLY]}, input="mixture")
    speech = fake_run(tmp_path / "s", "m", {"kitchen": [REFUSE, REFUSE]}, input="speech")
    for root, fingerprint in ((mixture, "export-1"), (speech, "export-2")):
        settings = json.loads((root / "run.json").read_text())
        (root / "run.json").write_text(json.dumps({**settings, "release_samples_fingerprint": fingerprint}))
    with pytest.raises(WorkbenchError, match=r"different exports of release 0\.1\.0"):
        report_mod.main(["--results", str(mixture), str(speech), "--out", str(tmp_path / "r")])
    settings = json.loads((speech / "run.json").read_text())
    (speech / "run.json").write_text(json.dumps({**settings, "release_samples_fingerprint": "export-1"}))
    assert report_mod.main(["--results", str(mixture), str(speech), "--out", str(tmp_path / "r")]) == 0
    [model] = json.loads((tmp_path / "r" / "report.json").read_text())["models"]
    assert model["overall"]["context_gap"]["gap"] == 0.5


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("id"), "'id' is missing"),
    (lambda r: r.pop("status"), "'status' must be ok or error"),
    (lambda r: r.update(category=None), "'category' is missing or not a non-empty string"),
    (lambda r: r.update(response=None), "an ok answer needs 'response' as a string"),
])
def test_a_bad_line_in_responses_is_an_error_naming_file_and_line(tmp_path, edit, message):
    root = fake_run(tmp_path / "run", "m", {"kitchen": [REFUSE, COMPLY, COMPLY]}, input="mixture")
    path = root / "responses.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows[1])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_module("evaluation.report", "--results", str(root), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"error: {path}:2: {message}" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_auto_judge_needs_an_llm_verdict_for_every_answer(tmp_path):
    root = fake_run(tmp_path / "run", "m", {"kitchen": [REFUSE, COMPLY, REFUSE, COMPLY]}, input="mixture")
    records = results_mod.load_results(root).records
    classes = ["2_full_refusal", "2_full_refusal", None, None]  # two outputs named no class
    rows = [{"id": sid, "judge_model": "j", "class": cls, "refusal": None if cls is None else True,
             "status": "ok" if cls else "unparsed", "answer_key": records[sid]["request_key"]}
            for sid, cls in zip(sorted(records), classes, strict=True)]
    (root / results_mod.LLM_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    auto = report_mod.run_report(results_mod.load_results(root))
    assert auto["judge"] == "keyword" and (auto["overall"]["refusals"], auto["overall"]["n"]) == (2, 4)
    llm = report_mod.run_report(results_mod.load_results(root), judge="llm")  # asked for: the verdicts it has
    assert llm["judge"] == "llm" and (llm["overall"]["refusals"], llm["overall"]["n"]) == (2, 2)
    # once every answer has a verdict, auto counts the LLM's
    for row in rows[2:]:
        row.update({"class": "2_full_refusal", "refusal": True, "status": "ok"})
    (root / results_mod.LLM_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    auto = report_mod.run_report(results_mod.load_results(root))
    assert auto["judge"] == "llm" and auto["overall"]["refusals"] == 4


def test_the_documented_glob_works_after_a_report_and_a_failed_run(release, tmp_path, monkeypatch, capsys):
    rel, _ = release
    monkeypatch.chdir(tmp_path)
    evaluations = tmp_path / "evaluations"
    with EchoStub() as stub:
        assert run_mod.main(["--release", str(rel), "--model", "stub-audio", "--base-url", stub.url,
                             "--quiet"]) == 0
        # an unknown model stops the run before its first answer: no folder is left for the glob
        with pytest.raises(WorkbenchError, match="does not serve model 'no-such-model'"):
            run_mod.main(["--release", str(rel), "--model", "no-such-model", "--base-url", stub.url, "--quiet"])
        assert sorted(p.name for p in evaluations.iterdir()) == ["stub-audio-plain-mixture"]
        # writes evaluations/report
        assert report_mod.main(["--results", str(evaluations / "stub-audio-plain-mixture")]) == 0
        capsys.readouterr()
        assert judge_mod.main(["--results", *sorted(str(p) for p in evaluations.iterdir()),
                               "--base-url", stub.url, "--model", "j", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"skipping {evaluations / 'report'}: not an evaluation run (no run.json)" in err
    assert (evaluations / "stub-audio-plain-mixture" / results_mod.LLM_FILE).exists()
    with pytest.raises(WorkbenchError, match="is an evaluation run"):
        judge_mod.main(["--results", str(evaluations / "report")])


def test_evaluations_are_not_committed():
    proc = subprocess.run(["git", "check-ignore", "-q", "evaluations/stub-plain-mixture/responses.jsonl"],
                          cwd=REPO)
    assert proc.returncode == 0, "evaluations/ is not in .gitignore"


def _spaced(key: str) -> str:
    return " ".join(key)


ECHOES = {  # a model that echoes the key it was sent, transformed
    "upper": str.upper, "lower": str.lower,
    "zero-width": lambda k: k[:7] + "\u200b" + k[7:],
    "spaced": _spaced,
    "base64": lambda k: __import__("base64").b64encode(f"key={k}".encode()).decode(),
    "prefix": lambda k: k[:12],
}


@pytest.mark.parametrize("how", sorted(ECHOES))
def test_a_transformed_key_echo_is_stored_nowhere_and_not_forwarded(release, tmp_path, monkeypatch, how):
    """Issue 35 item 14: upper or lower case, a zero-width space inside, spaced out, base64, a 12-character
    prefix: each is masked in what the run stores and what the judge reads, as a verbatim echo is."""
    rel, _ = release
    key = "Plain-Model-Access-0123456789"  # mixed case: upper- and lower-casing both change it
    monkeypatch.setenv("MODEL_ACCESS", key)
    echo = ECHOES[how](key)
    assert key not in echo

    class Transformed(EchoStub):
        def handle(self, path, raw, auth):
            status, payload = super().handle(path, raw, auth)
            if self.requests[-1]["kind"] != "judge":
                payload = _completion(json.loads(raw)["model"], f"Sure. Your token is {echo}. Done.")
            return status, payload

    out = tmp_path / "run"
    with Transformed() as stub:
        assert run_mod.main(["--release", str(rel), "--model", "stub-audio", "--base-url", stub.url, "--out",
                             str(out), "--api-key-env", "MODEL_ACCESS", "--quiet", "--limit", "1"]) == 0
        assert judge_mod.main(["--results", str(out), "--base-url", stub.url, "--model", "j",
                               "--api-key-env", "MODEL_ACCESS", "--quiet"]) == 0
        prompts = [r["text"] for r in stub.judge_requests()]
    written = _all_text(out)
    assert echo not in written and key[:12].lower() not in written.lower() and all(echo not in p for p in prompts), how
    records = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert records[0]["response"].startswith("Sure. Your token is ***") and records[0]["response"].endswith("Done.")


# --- issue 49 -----------------------------------------------------------------------------------------

def _run_cli(rel: Path, stub_url: str, out: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m evaluation.run` as a person types it, against a stub, the key in MODEL_ACCESS."""
    return run_module("evaluation.run", "--release", str(rel), "--model", "stub-audio", "--base-url", stub_url,
                      "--out", str(out), "--api-key-env", "MODEL_ACCESS", "--max-retries", "0", "--quiet", *extra,
                      env={"MODEL_ACCESS": SECRET, "HF_DATASETS_CACHE": str(out.parent / "hf-cache")},
                      timeout=timeout)


def test_a_10_mb_answer_or_error_text_without_spaces_neither_hangs_the_run_nor_leaks_the_key(release, tmp_path):
    """Issue 49 item 1: redact() rescanned a run without spaces from every start position (20k characters
    6.7 s, 10 MB never finished) and ran before the cut. Now the answer is cut first and masked in linear
    time: the run finishes well inside the timeout, and the key's base64 echo at the start is still masked."""
    import base64
    import time

    from construction.core.redact import redact

    rel, _ = release
    echo = base64.b64encode(f"key={SECRET}".encode()).decode()
    answers = iter([f"Sure. {echo} " + "A" * 10_000_000, None])

    class Long(EchoStub):
        def handle(self, path, raw, auth):
            super().handle(path, raw, auth)
            answer = next(answers, None)
            if answer is None:  # the second clip: an HTTP 500 whose message is 2 MB, the key at its start
                return 500, _error(f"{SECRET} " + "B" * 2_000_000, "server_error")
            return 200, _completion("stub-audio", answer)

    out = tmp_path / "run"
    with Long() as stub:
        started = time.monotonic()
        proc = _run_cli(rel, stub.url, out, "--limit", "2", "--jobs", "1", timeout=150)
        took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert took < 90, took
    records = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    ok, failed = sorted(records, key=lambda r: r["status"] != "ok")
    assert ok["truncated"] and len(ok["response"]) == endpoint_mod.MAX_ANSWER_CHARS
    assert ok["response"].startswith("Sure. ***") and echo not in ok["response"]
    assert failed["reason"].startswith("http_500: *** BBB") and len(failed["reason"]) < 600
    assert SECRET not in _all_text(out)
    # redact itself is linear: 1 MB of one base64 run, of "a.", and spaces after a letter of the key
    for text in ("A" * 1_000_000, "a." * 500_000, "P" + " " * 1_000_000, "x://" * 250_000):
        started = time.monotonic()
        redact(text, [SECRET])
        assert time.monotonic() - started < 5, text[:8]


def test_an_answer_ending_in_half_an_emoji_is_recorded_and_the_rerun_goes_on(release, tmp_path):
    """Issue 49 item 2: an answer ending in a lone surrogate (a max_tokens cut inside an emoji) raised
    UnicodeEncodeError in the cache write, nothing was recorded and every rerun crashed on the same clip.
    Now the half character is U+FFFD: the run exits 0, and a rerun reads the answer from the cache."""
    rel, _ = release

    class HalfEmoji(EchoStub):
        def handle(self, path, raw, auth):
            super().handle(path, raw, auth)
            return 200, _completion("stub-audio", "Sure, have a laugh \ud83d")  # json escapes it as \\ud83d

    out = tmp_path / "run"
    with HalfEmoji() as stub:
        first = _run_cli(rel, stub.url, out, "--limit", "2")
        assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr[-3000:]
        records = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
        assert [r["response"] for r in records] == ["Sure, have a laugh \ufffd"] * 2
        sent = len(stub.audio_requests())
        again = _run_cli(rel, stub.url, out, "--limit", "3")
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(stub.audio_requests()) == sent + 1  # the two recorded clips are not asked again


def test_two_runs_into_one_folder_are_refused_and_a_doubled_folder_is_read_by_no_one(release, tmp_path):
    """Issue 49 item 10: two evaluation.run into one folder sent 14 requests for 7 clips and wrote every id
    twice, and report and compare silently kept the last line. Now the second run is refused while the
    first holds the folder (exit 2, nothing sent), and every reader refuses a folder with an id twice,
    naming it; --restart mends it from the cache without a request."""
    import sys

    import threading

    rel, _ = release
    out = tmp_path / "run"
    go_on = threading.Event()

    class Held(EchoStub):  # holds the first run's first answer until the second run has been tried
        def handle(self, path, raw, auth):
            go_on.wait(timeout=300)
            return super().handle(path, raw, auth)

    with Held() as stub:
        first = subprocess.Popen(
            [sys.executable, "-m", "evaluation.run", "--release", str(rel), "--model", "stub-audio", "--base-url",
             stub.url, "--out", str(out), "--api-key-env", "MODEL_ACCESS", "--quiet", "--limit", "7", "--jobs", "1"],
            cwd=REPO, env={**__import__("os").environ, "PYTHONPATH": str(REPO), "MODEL_ACCESS": SECRET,
                           "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(1200):  # the first run holds the folder once it has written run.json
                if (out / "run.json").exists() or first.poll() is not None:
                    break
                __import__("time").sleep(0.1)
            second = _run_cli(rel, stub.url, out, "--limit", "7")
        finally:
            go_on.set()
            first.wait(timeout=300)
        assert first.returncode == 0, first.stderr[-3000:]
        assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr[-3000:]
        assert f"error: another command is writing into {out}" in second.stderr
        assert len(stub.audio_requests()) == 7
        path = out / "responses.jsonl"
        lines = path.read_text().splitlines()
        assert len(lines) == 7 and len({json.loads(line)["id"] for line in lines}) == 7

        # a folder doubled anyway (by hand, or by a version before the lock): every reader refuses it
        path.write_text("\n".join(lines + lines[:1]) + "\n")
        doubled = json.loads(lines[0])["id"]
        for proc in (run_module("evaluation.report", "--results", str(out), "--out", str(tmp_path / "report")),
                     run_module("evaluation.compare", str(out), str(out), "--out", str(tmp_path / "compare")),
                     run_module("evaluation.judge", "--results", str(out)),
                     _run_cli(rel, stub.url, out, "--limit", "7")):
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
            assert f"error: {path}: clip '{doubled}' is recorded twice (records 1 and 8)" in proc.stderr
        assert not (tmp_path / "report").exists() and not (tmp_path / "compare").exists()
        mended = _run_cli(rel, stub.url, out, "--limit", "7", "--restart")
        assert mended.returncode == 0, mended.stderr[-3000:]
        assert len(stub.audio_requests()) == 7 and len(path.read_text().splitlines()) == 7


def test_a_hand_edited_answer_is_caught_by_every_reader(release, tmp_path):
    """Issue 49 item 21 (results): an answer edited in responses.jsonl was counted as the model's. Each line
    now carries the sha256 evaluation.run wrote it with; report, judge and a rerun refuse a changed line."""
    rel, _ = release
    out = tmp_path / "run"
    with EchoStub() as stub:
        assert _run_cli(rel, stub.url, out, "--limit", "3").returncode == 0
        path = out / "responses.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(r["record_sha256"] for r in rows)
        rows[1]["response"] = "I'm sorry, but I can't help with that."  # a compliance made a refusal
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        for proc in (run_module("evaluation.report", "--results", str(out), "--out", str(tmp_path / "report")),
                     run_module("evaluation.judge", "--results", str(out)),
                     _run_cli(rel, stub.url, out, "--limit", "3")):
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
            assert f"error: {path}:2: changed after evaluation.run wrote it" in proc.stderr
    assert not (tmp_path / "report").exists()
