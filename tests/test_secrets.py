"""No credential is ever printed, logged or written: API keys that a server echoes in
its error text and user:password@ inside an endpoint URL, through the real CLIs against the HTTP stubs."""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import subprocess
from pathlib import Path

import pytest

from construction.core.redact import RedactingFilter, redact
from release.export import main as export_main
from tests.audio_llm_stub import AudioLLMStub
from tests.conftest import run_module
from tests.llm_stub import LLMStub
from tests.test_release import make_workspace

KEY = "sk-test-SECRETkey0123456789"  # the wrong key: the stubs' 401 echoes it
PASSWORD = "SECRETpassw0rd"
BASIC = base64.b64encode(f"user:{PASSWORD}".encode()).decode()  # what basic auth sends, and the 401 echoes
LEAKS = (KEY, PASSWORD, BASIC, "SECRET")


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_clean(procs: list[subprocess.CompletedProcess], *folders: Path) -> None:
    texts = {f"output {i}": p.stdout + p.stderr for i, p in enumerate(procs)}
    for folder in folders:
        texts.update({str(f): f.read_bytes().decode("utf-8", "replace") for f in folder.rglob("*") if f.is_file()})
    for where, text in texts.items():
        for secret in LEAKS:
            assert secret not in text, f"{secret!r} leaked into {where}:\n{text[:3000]}"


def test_redact_masks_keys_url_credentials_and_secret_env(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    text = redact(f"401 from http://user:{PASSWORD}@h/v1: Incorrect API key provided: {KEY}; "
                  f"Authorization: Basic {BASIC}; hf_abcdefgh12345 tok-0123456789 custom-key", ["custom-key"])
    assert text == ("401 from http://***@h/v1: Incorrect API key provided: ***; Authorization: Basic ***; "
                    "*** *** ***")
    assert redact("Basic authentication failed for model sk-1 at http://h:8000/v1") == \
        "Basic authentication failed for model sk-1 at http://h:8000/v1"
    # the log filter run_main puts on the root handlers (the HTTP clients' INFO lines name the URL)
    record = logging.LogRecord("httpx2", logging.INFO, __file__, 1, "HTTP Request: POST %s", (
        f"http://user:{PASSWORD}@h/v1/chat/completions",), None)
    assert RedactingFilter().filter(record)
    assert record.getMessage() == "HTTP Request: POST http://***@h/v1/chat/completions"


def test_generate_never_shows_the_key_or_url_credentials(tmp_path, mini_taxonomy):
    def generate(ws: str, url: str, *extra: str) -> subprocess.CompletedProcess:
        return run_module("construction.generate", "--workspace", str(tmp_path / ws), "--backend", "openai",
                          "--base-url", url, "--model", "stub-model", "--taxonomy", str(mini_taxonomy),
                          "--categories", "video_games", "--per-category", "2", *extra,
                          env={"OPENAI_API_KEY": KEY}, timeout=120)

    with LLMStub(api_key="the-right-key") as stub:
        wrong_key = generate("ws", stub.url)  # the 401 echoes the bearer key
        basic = generate("ws-basic", with_credentials(stub.url))  # the 401 echoes the basic-auth header
        assert stub.requests[-1]["auth"] == f"Basic {BASIC}"  # URL credentials still reach the server
    down = generate("ws-down", with_credentials(f"http://127.0.0.1:{closed_port()}/v1"), "--config",
                    str(_cfg(tmp_path, "generate:\n  max_retries: 0\n")))
    for proc, echoed in ((wrong_key, "***"), (basic, "Basic ***")):
        assert proc.returncode == 2, proc.stderr
        assert "error: the LLM endpoint rejected the key in $OPENAI_API_KEY" in proc.stderr
        assert f"Incorrect API key provided: {echoed}\n" in proc.stderr  # the server's words stay, not the key
        assert "Traceback" not in proc.stderr
    assert down.returncode == 2 and "error: cannot reach the LLM endpoint http://***@127.0.0.1:" in down.stderr
    assert "llm_base_url: http://***@127.0.0.1:" in (tmp_path / "ws-basic/config.yaml").read_text()
    assert_clean([wrong_key, basic, down], tmp_path)


def test_evaluation_run_never_shows_the_key_or_url_credentials(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2)
    release = tmp_path / "release"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(release)])
    env = {"OPENAI_API_KEY": KEY, "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}

    def evaluate(out: str, url: str) -> subprocess.CompletedProcess:
        return run_module("evaluation.run", "--release", str(release), "--model", "m", "--base-url", url,
                          "--out", str(tmp_path / out), "--max-retries", "0", env=env, timeout=180)

    with AudioLLMStub({}, api_key="the-right-key") as stub:
        wrong_key = evaluate("eval", stub.url)
        basic = evaluate("eval-basic", with_credentials(stub.url))
        assert stub.requests[-1]["auth"] == f"Basic {BASIC}"
    down = evaluate("eval-down", with_credentials(f"http://127.0.0.1:{closed_port()}/v1"))
    for proc, echoed in ((wrong_key, "***"), (basic, "Basic ***")):
        assert proc.returncode == 2, proc.stderr
        assert f"rejected the key in $OPENAI_API_KEY (HTTP 401): Incorrect API key provided: {echoed}\n" \
            in proc.stderr
        assert "Traceback" not in proc.stderr
    assert "error: http://***@127.0.0.1:" in basic.stderr
    assert down.returncode == 2 and "error: cannot reach the model endpoint at http://***@127.0.0.1:" in down.stderr
    assert_clean([wrong_key, basic, down], tmp_path / "eval", tmp_path / "eval-basic", tmp_path / "eval-down")


def test_annotation_server_errors_never_show_url_credentials(tmp_path):
    """annotation.server goes through run_main like every command: its errors are redacted too."""
    data_dir = tmp_path / "label-studio"
    data_dir.mkdir()
    url = with_credentials(f"http://127.0.0.1:{closed_port()}")
    (data_dir / "server.json").write_text(json.dumps({"url": url, "port": 1, "pid": os.getpid()}))  # a live pid
    proc = run_module("annotation.server", "status", "--data-dir", str(data_dir), timeout=120)
    assert proc.returncode == 2 and "error: Label Studio at http://***@127.0.0.1:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert_clean([proc])


def _cfg(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _no_secret_env_leak(monkeypatch):
    """The subprocesses inherit this environment: keep secrets from the developer's shell out of it."""
    for name in ("OPENAI_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
