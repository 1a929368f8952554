"""A stand-in for the CosyVoice FastAPI runtime (runtime/python/fastapi/server.py) on 127.0.0.1.

It speaks the same protocol: GET or POST to /inference_<mode> with form fields (multipart, or urlencoded
for the endpoints without a file), answers with a chunked stream of raw mono int16 PCM, no header and no
content type. Missing form fields get FastAPI's 422 JSON. Instead of a model it returns a tone whose
length depends on the text (`expected_pcm`), records every request, and can be switched into failure
modes to test clients. Run it alone with `python tests/cosyvoice_stub.py --port 50000`.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import numpy as np

# endpoint -> (required form fields, required file fields), as in the runtime's FastAPI signatures
ENDPOINTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "/inference_sft": (("tts_text", "spk_id"), ()),
    "/inference_zero_shot": (("tts_text", "prompt_text"), ("prompt_wav",)),
    "/inference_cross_lingual": (("tts_text",), ("prompt_wav",)),
    "/inference_instruct": (("tts_text", "spk_id", "instruct_text"), ()),
    "/inference_instruct2": (("tts_text", "instruct_text"), ("prompt_wav",)),
}
TONE_HZ = {path: 200.0 + 50.0 * i for i, path in enumerate(ENDPOINTS)}
SECONDS_PER_CHAR = 0.04
CHUNK_BYTES = 1001  # odd on purpose: int16 samples straddle chunk boundaries, as in a real stream

MODES = ("ok", "error500", "json", "json_untyped", "html", "empty", "odd", "silence", "slow", "huge", "truncate",
         "crash_after_200")


def expected_pcm(path: str, tts_text: str, sample_rate: int) -> bytes:
    """The int16 little-endian PCM the stub sends for a request: a tone, 40 ms per character."""
    n = max(1, round(SECONDS_PER_CHAR * len(tts_text) * sample_rate))
    t = np.arange(n) / sample_rate
    tone = 0.5 * np.sin(2 * np.pi * TONE_HZ[path] * t)
    return (tone * 32767).astype("<i2").tobytes()


@dataclass
class StubRequest:
    method: str
    path: str
    fields: dict[str, str]
    files: dict[str, bytes]
    content_type: str


@dataclass
class CosyVoiceStub:
    """Start with `with CosyVoiceStub() as stub:`; `stub.url` is the base URL."""

    sample_rate: int = 24000
    port: int = 0  # 0: a free port
    slow_s: float = 2.0
    requests: list[StubRequest] = field(default_factory=list)
    mode: str = "ok"
    fail_times: int | None = None  # None: the mode holds until changed; n: the next n requests, then "ok"

    def set_mode(self, mode: str, times: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown stub mode {mode!r}; one of {MODES}")
        with self._lock:
            self.mode, self.fail_times = mode, times

    def start(self) -> "CosyVoiceStub":
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _make_handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "CosyVoiceStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_mode(self) -> str:
        with self._lock:
            mode = self.mode
            if self.fail_times is not None:
                self.fail_times -= 1
                if self.fail_times <= 0:
                    self.mode, self.fail_times = "ok", None
            return mode


def _parse_multipart(body: bytes, content_type: str) -> tuple[dict[str, str], dict[str, bytes]]:
    boundary = content_type.split("boundary=", 1)[1].split(";")[0].strip().strip('"').encode()
    fields: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for section in body.split(b"--" + boundary)[1:-1]:
        head, _, data = section.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        data = data.removesuffix(b"\r\n")
        disposition = next(
            line.decode() for line in head.split(b"\r\n") if line.lower().startswith(b"content-disposition")
        )
        params = dict(
            part.strip().split("=", 1) for part in disposition.split(";")[1:] if "=" in part
        )
        name = params["name"].strip('"')
        if "filename" in params:
            files[name] = data
        else:
            fields[name] = data.decode("utf-8")
    return fields, files


def _make_handler(stub: CosyVoiceStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/openapi.json":
                body = json.dumps({"openapi": "3.1.0", "paths": {p: {} for p in ENDPOINTS}}).encode()
                self._send_whole(200, "application/json", body)
            else:
                self.do_POST()

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if path not in ENDPOINTS:
                self._send_whole(404, "application/json", b'{"detail":"Not Found"}')
                return
            content_type = self.headers.get("content-type", "")
            if content_type.startswith("multipart/form-data"):
                fields, files = _parse_multipart(body, content_type)
            else:
                fields = {k: v[0] for k, v in parse_qs(body.decode("utf-8")).items()}
                files = {}
            with stub._lock:
                stub.requests.append(StubRequest(self.command, path, fields, files, content_type))
            need_fields, need_files = ENDPOINTS[path]
            missing = [f for f in need_fields if f not in fields] + [f for f in need_files if f not in files]
            if missing:
                detail = [{"type": "missing", "loc": ["body", f], "msg": "Field required"} for f in missing]
                self._send_whole(422, "application/json", json.dumps({"detail": detail}).encode())
                return
            self._answer(stub._next_mode(), expected_pcm(path, fields["tts_text"], stub.sample_rate))

        def _answer(self, mode: str, pcm: bytes) -> None:
            if mode == "error500":
                self._send_whole(500, "text/plain; charset=utf-8", b"Internal Server Error")
            elif mode == "json":
                self._send_whole(200, "application/json", b'{"detail":"model not loaded"}')
            elif mode == "json_untyped":
                self._stream([b'{"error": "CUDA out of memory"}'])
            elif mode == "html":
                self._send_whole(200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")
            elif mode == "empty":
                self._stream([])
            elif mode == "odd":
                self._stream(_chunks(pcm + b"\x01"))
            elif mode == "silence":
                self._stream(_chunks(bytes(len(pcm))))
            elif mode == "slow":
                time.sleep(stub.slow_s)
                self._stream(_chunks(pcm))
            elif mode == "huge":
                # ~15 minutes of tone, made lazily; the client should stop reading long before the end
                self._stream(chunk for _ in range(2000) for chunk in _chunks(pcm))
            elif mode == "truncate":
                self._stream(_chunks(pcm[: len(pcm) // 2]), finish=False)
            elif mode == "crash_after_200":
                # the stock server: StreamingResponse has sent 200 when its generator raises on the first
                # item; uvicorn then closes the connection without the last chunk
                self._stream([], finish=False)
            else:
                self._stream(_chunks(pcm))

        def _send_whole(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, chunks: Iterable[bytes], finish: bool = True) -> None:
            # Like Starlette's StreamingResponse with no media_type: chunked, no content-type header.
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                if finish:
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.close_connection = True  # drop the connection mid-stream
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client stopped reading (e.g. "huge")

    return Handler


def _chunks(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=50000)
    parser.add_argument("--sample-rate", type=int, default=24000)
    parser.add_argument("--mode", choices=MODES, default="ok")
    args = parser.parse_args()
    server = CosyVoiceStub(sample_rate=args.sample_rate, port=args.port).start()
    server.set_mode(args.mode)
    print(f"CosyVoice stub on {server.url} (Ctrl-C stops)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
