"""CosyVoice 2/3 text-to-speech: the production TTS backend.

Two ways to reach the model, behind the same `synthesize(text, voice, speed)` interface as the offline
backends in `construction.speech.tts`:

- `CosyVoiceHTTP`: a CosyVoice FastAPI runtime (`runtime/python/fastapi/server.py`, or a fork with its
  prompt-wav bug fixed) on some GPU machine. Responses are raw mono int16 PCM with no header, so the
  sample rate comes from our configuration, never from the response.
- `CosyVoiceLocal`: the model in this process, from a local CosyVoice checkout and a local model folder.

A CosyVoice voice is a reference prompt (a short wav plus its exact transcript) from a prompt bank file
(construction.speech.cosyvoice_bank). A clip is either zero-shot cloning of the prompt voice or, with a
speaker `style`, `inference_instruct2` with an instruction sentence for that style; the sentences and each
model version's prompt formats are in construction.speech.cosyvoice_prompts.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import requests

from construction.core.errors import WorkbenchError
from construction.speech.cosyvoice_bank import BACKEND_NAME, CosyVoicePrompt, load_prompt_bank, prompt_voices
from construction.speech.cosyvoice_prompts import (
    NEUTRAL_STYLES,
    STYLE_INSTRUCTIONS,
    TRAINED_INSTRUCTIONS,
    check_version,
    instruct_prompt_text,
    zero_shot_prompt_text,
)
from construction.speech.voices import Voice

# The stock runtime/python/fastapi/server.py passes load_wav's tensor where the frontend loads a file; that
# fails inside the StreamingResponse generator, after HTTP 200: the client sees a broken or empty stream.
STOCK_SERVER_HINT = (" (the stock runtime/python/fastapi/server.py fails on prompt endpoints because it passes a"
                     " tensor where the frontend expects a path, after it has answered HTTP 200, so the stream"
                     " breaks off or comes back empty; run a patched server)")

# FastAPI runtime endpoints (runtime/python/fastapi/server.py).
ZERO_SHOT_PATH = "/inference_zero_shot"
INSTRUCT2_PATH = "/inference_instruct2"


# --------------------------------------------------------------------------- shared backend logic


class _CosyVoiceBackend:
    """What both transports share: the prompt bank, prompt formats, style lookup and output checks."""

    name = BACKEND_NAME
    sample_rate: int

    def __init__(
        self,
        prompts: Sequence[CosyVoicePrompt],
        version: int,
        style_instructions: Mapping[str, str] | None,
        max_duration_s: float,
    ) -> None:
        self.version = check_version(version)
        if not prompts:
            raise WorkbenchError("CosyVoice backend needs at least one prompt (see load_prompt_bank)")
        self.prompts = {p.voice_id: p for p in prompts}
        self.style_instructions = dict(STYLE_INSTRUCTIONS if style_instructions is None else style_instructions)
        if max_duration_s <= 0:
            raise WorkbenchError(f"CosyVoice max_duration_s must be positive, got {max_duration_s}")
        self.max_duration_s = max_duration_s

    def voices(self) -> list[Voice]:
        return prompt_voices(self.prompts.values())

    def instruction_for_style(self, style: str | None) -> str | None:
        """The instruction sentence for a speaker style, or None for plain zero-shot cloning."""
        if style is None or style.strip().lower() in NEUTRAL_STYLES:
            return None
        key = style.strip().lower()
        if key not in self.style_instructions:
            known = ", ".join(sorted(self.style_instructions))
            raise WorkbenchError(f"CosyVoice: no instruction for speaker style {style!r} (known: {known})")
        return self.style_instructions[key]

    def style_rendering(self, style: str | None) -> tuple[bool, str | None]:
        """(whether this model version speaks the style, the reason when it does not). A style is rendered
        only through an instruction the version was trained on; a neutral style needs none."""
        instruction = self.instruction_for_style(style)
        if instruction is None:
            return True, None
        if instruction.strip() in TRAINED_INSTRUCTIONS[self.version]:
            return True, None
        return False, (f"instruction {instruction!r} for style {style!r} is not one CosyVoice{self.version} was "
                       "trained on; the model may ignore it")

    def _prompt_for(self, voice: Voice) -> CosyVoicePrompt:
        if voice.backend != BACKEND_NAME:
            raise WorkbenchError(f"CosyVoice cannot speak voice {voice.voice_id!r} of backend {voice.backend!r}")
        prompt = self.prompts.get(voice.name)
        if prompt is None:
            known = ", ".join(self.prompts)
            raise WorkbenchError(f"CosyVoice voice {voice.name!r} is not in the prompt bank ({known})")
        return prompt

    def _max_samples(self, text: str) -> int:
        # Speech runs ~15 characters/s; far longer output means the model is looping or reading the prompt.
        return int(self.sample_rate * min(self.max_duration_s, 5.0 + 0.5 * len(text)))

    def _check_audio(self, audio: np.ndarray, text: str, source: str) -> np.ndarray:
        if audio.size == 0:
            raise WorkbenchError(f"{source}: CosyVoice returned no audio for {text!r}")
        if audio.size > self._max_samples(text):
            raise WorkbenchError(
                f"{source}: CosyVoice returned {audio.size / self.sample_rate:.1f} s of audio for {len(text)} "
                f"characters ({text[:60]!r}); the limit is {self._max_samples(text) / self.sample_rate:.1f} s"
            )
        if not np.isfinite(audio).all():
            raise WorkbenchError(f"{source}: CosyVoice returned non-finite samples for {text!r}")
        if not np.any(audio):
            raise WorkbenchError(f"{source}: CosyVoice returned only silence for {text!r}")
        return audio


def _check_text(text: str) -> str:
    if not text or not text.strip():
        raise WorkbenchError("CosyVoice: text to speak is empty")
    return text.strip()


def _check_speed(speed: float) -> float:
    if not 0.5 <= speed <= 2.0:
        raise WorkbenchError(f"CosyVoice: speed must be within 0.5..2.0, got {speed}")
    return float(speed)


# --------------------------------------------------------------------------- HTTP client


class CosyVoiceHTTP(_CosyVoiceBackend):
    """Client of the CosyVoice FastAPI runtime: POST form fields + prompt wav, read raw int16 PCM.

    `sample_rate` must match the server's model (24000 for CosyVoice 2 and 3); the stream carries none.
    The runtime has no speed or seed fields, so `speed` must be 1.0 and clips are not seeded here.
    `timeout_s` is the connect timeout and the longest wait for the next bytes of the stream.
    The upstream server casts to int16 without clipping, so a model peak above full scale arrives
    wrapped around; that cannot be undone here (the WER filter downstream catches garbled clips).
    """

    def __init__(
        self,
        base_url: str,
        sample_rate: int = 24000,
        timeout_s: float = 120.0,
        retries: int = 3,
        *,
        prompts: Sequence[CosyVoicePrompt],
        version: int = 3,
        backoff_s: float = 1.0,
        max_duration_s: float = 60.0,
        style_instructions: Mapping[str, str] | None = None,
        session: requests.Session | None = None,
    ) -> None:
        super().__init__(prompts, version, style_instructions, max_duration_s)
        if not re.match(r"^https?://", base_url):
            raise WorkbenchError(f"CosyVoice base_url must start with http:// or https://, got {base_url!r}")
        if sample_rate <= 0 or timeout_s <= 0 or retries < 0 or backoff_s < 0:
            raise WorkbenchError(
                "CosyVoice HTTP: sample_rate and timeout_s must be positive, retries and backoff_s >= 0"
            )
        self.base_url = base_url.rstrip("/")
        self.sample_rate = int(sample_rate)
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self._session = session or requests.Session()
        self._wav_bytes: dict[str, bytes] = {}

    def check_server(self) -> None:
        """Fail early when the server is down or lacks the endpoints we use (reads FastAPI's /openapi.json)."""
        url = f"{self.base_url}/openapi.json"
        try:
            response = self._session.get(url, timeout=self.timeout_s)
            paths = response.json().get("paths", {}) if response.ok else {}
        except requests.RequestException as exc:
            raise WorkbenchError(f"CosyVoice server {self.base_url} is not reachable: {exc}") from exc
        except ValueError as exc:
            raise WorkbenchError(f"CosyVoice server {url} did not return OpenAPI JSON") from exc
        missing = [p for p in (ZERO_SHOT_PATH, INSTRUCT2_PATH) if p not in paths]
        if not response.ok or missing:
            raise WorkbenchError(
                f"CosyVoice server {self.base_url} does not look like the CosyVoice FastAPI runtime "
                f"(HTTP {response.status_code}; missing endpoints: {', '.join(missing) or 'none'})"
            )

    def synthesize(
        self, text: str, voice: Voice, speed: float = 1.0, style: str | None = None
    ) -> tuple[np.ndarray, int]:
        text = _check_text(text)
        if _check_speed(speed) != 1.0:
            raise WorkbenchError("CosyVoice HTTP: the FastAPI runtime has no speed field; use speed=1.0")
        prompt = self._prompt_for(voice)
        instruction = self.instruction_for_style(style)
        if instruction is None:
            path = ZERO_SHOT_PATH
            fields = {"tts_text": text, "prompt_text": zero_shot_prompt_text(prompt.transcript, self.version)}
        else:
            path = INSTRUCT2_PATH
            fields = {"tts_text": text, "instruct_text": instruct_prompt_text(instruction, self.version)}
        pcm = self._post(path, fields, self._prompt_bytes(prompt), text)
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        return self._check_audio(audio, text, f"{self.base_url}{path}"), self.sample_rate

    def _prompt_bytes(self, prompt: CosyVoicePrompt) -> bytes:
        if prompt.voice_id not in self._wav_bytes:
            try:
                self._wav_bytes[prompt.voice_id] = prompt.wav_path.read_bytes()
            except OSError as exc:
                raise WorkbenchError(
                    f"CosyVoice prompt {prompt.voice_id}: cannot read {prompt.wav_path}: {exc}"
                ) from exc
        return self._wav_bytes[prompt.voice_id]

    def _post(self, path: str, fields: dict[str, str], wav: bytes, text: str) -> bytes:
        url = f"{self.base_url}{path}"
        last_problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                with self._session.post(
                    url,
                    data=fields,
                    files={"prompt_wav": ("prompt_wav", wav, "application/octet-stream")},
                    stream=True,
                    timeout=self.timeout_s,
                ) as response:
                    if response.status_code >= 500:
                        last_problem = f"HTTP {response.status_code}: {_head(response)}"
                        continue
                    if response.status_code != 200:
                        # 4xx is our request's fault (e.g. FastAPI's 422 for a missing field): retrying won't help.
                        raise WorkbenchError(
                            f"CosyVoice server {url} refused the request: "
                            f"HTTP {response.status_code}: {_head(response)}"
                        )
                    return self._read_pcm(response, url, text)
            except requests.ConnectionError as exc:
                last_problem = f"cannot connect ({_reason(exc)})"
            except requests.Timeout:
                last_problem = f"no response within {self.timeout_s:g} s"
            except requests.exceptions.ChunkedEncodingError as exc:
                last_problem = f"stream broke off ({_reason(exc)})"
        hint = STOCK_SERVER_HINT if last_problem.startswith(("HTTP 5", "stream broke off")) else ""
        raise WorkbenchError(f"CosyVoice server {url} failed after {self.retries + 1} attempts: {last_problem}{hint}")

    def _read_pcm(self, response: requests.Response, url: str, text: str) -> bytes:
        content_type = response.headers.get("content-type", "").lower()
        if any(kind in content_type for kind in ("json", "html", "xml", "text/")):
            raise WorkbenchError(
                f"CosyVoice server {url} sent {content_type}, not raw PCM: {_head(response)}"
            )
        max_bytes = 2 * self._max_samples(text)
        body = bytearray()
        for chunk in response.iter_content(chunk_size=1 << 16):
            body += chunk
            if len(body) > max_bytes:
                raise WorkbenchError(
                    f"CosyVoice server {url} sent more than {max_bytes / 2 / self.sample_rate:.1f} s of audio "
                    f"for {len(text)} characters ({text[:60]!r}); stopped reading"
                )
        if not body:
            raise WorkbenchError(f"CosyVoice server {url} sent an empty body for {text!r}{STOCK_SERVER_HINT}")
        if _looks_like_text(bytes(body)):
            raise WorkbenchError(f"CosyVoice server {url} sent text, not raw PCM: {_snippet(bytes(body))}")
        if len(body) % 2:
            raise WorkbenchError(
                f"CosyVoice server {url} sent {len(body)} bytes, an odd number: not whole int16 samples "
                "(cut-off stream or not PCM)"
            )
        return bytes(body)


def _looks_like_text(body: bytes) -> bool:
    """True for a JSON/HTML/plain-text error body: int16 speech is never all printable UTF-8."""
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return decoded.strip()[:1] in ("{", "[", "<") or all(c.isprintable() or c.isspace() for c in decoded)


def _head(response: requests.Response, limit: int = 200) -> str:
    """The start of an error body, without reading all of a possibly endless stream."""
    return _snippet(next(response.iter_content(chunk_size=limit), b""), limit)


def _snippet(body: bytes, limit: int = 200) -> str:
    return repr(body[:limit].decode("utf-8", errors="replace"))


def _reason(exc: Exception) -> str:
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if "timed out" in text:  # requests reports a read timeout mid-stream as a ConnectionError
        return "timed out"
    return str(exc)[:200]


# --------------------------------------------------------------------------- in-process model


class CosyVoiceLocal(_CosyVoiceBackend):
    """CosyVoice 2/3 in this process, from a local repo checkout and a local model folder.

    Upstream targets Python 3.10 and torch 2.3.1; install the checkout's requirements in the environment
    that runs this. `model_dir` must be a local folder: CosyVoice downloads from ModelScope when given a
    path that does not exist, which we refuse. Each clip is seeded from (seed, voice, style, speed, text),
    so a rerun of one clip gives the same audio whatever ran before it.
    """

    def __init__(
        self,
        repo_dir: str | Path,
        model_dir: str | Path,
        version: int = 3,
        fp16: bool = False,
        *,
        prompts: Sequence[CosyVoicePrompt],
        seed: int = 0,
        load_trt: bool = False,
        load_vllm: bool = False,
        max_duration_s: float = 60.0,
        style_instructions: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(prompts, version, style_instructions, max_duration_s)
        self.seed = int(seed)
        repo = Path(repo_dir).expanduser().resolve()
        model = Path(model_dir).expanduser().resolve()
        if not (repo / "cosyvoice" / "cli" / "cosyvoice.py").is_file():
            raise WorkbenchError(
                f"CosyVoice repo {repo} not found or not a CosyVoice checkout (no cosyvoice/cli/cosyvoice.py); "
                "git clone --recursive https://github.com/FunAudioLLM/CosyVoice.git"
            )
        matcha = repo / "third_party" / "Matcha-TTS"
        if not (matcha / "matcha").is_dir():
            raise WorkbenchError(
                f"CosyVoice repo {repo} lacks the Matcha-TTS submodule at {matcha}; "
                f"run: git -C {repo} submodule update --init --recursive"
            )
        yaml_name = f"cosyvoice{self.version}.yaml"
        if not model.is_dir():
            raise WorkbenchError(
                f"CosyVoice model dir {model} does not exist; download the CosyVoice{self.version} model there "
                "first (a non-local path would make CosyVoice download at run time)"
            )
        if not (model / yaml_name).is_file():
            raise WorkbenchError(f"CosyVoice model dir {model} has no {yaml_name}: not a CosyVoice{self.version} model")

        cli, common = _import_cosyvoice(repo, matcha)
        model_class = cli.CosyVoice3 if self.version == 3 else cli.CosyVoice2
        try:
            self._model = model_class(str(model), load_trt=load_trt, load_vllm=load_vllm, fp16=fp16)
        except Exception as exc:  # upstream raises ValueError/AssertionError/OSError/...; keep the cause chained
            raise WorkbenchError(f"CosyVoice{self.version} failed to load {model}: {exc!r}") from exc
        self._set_seed = common.set_all_random_seed
        self.sample_rate = int(self._model.sample_rate)
        self._registered: set[str] = set()

    def synthesize(
        self, text: str, voice: Voice, speed: float = 1.0, style: str | None = None
    ) -> tuple[np.ndarray, int]:
        text = _check_text(text)
        speed = _check_speed(speed)
        prompt = self._prompt_for(voice)
        instruction = self.instruction_for_style(style)
        self._set_seed(_clip_seed(self.seed, prompt.voice_id, style, speed, text))
        if instruction is None:
            self._register(prompt)
            outputs = self._model.inference_zero_shot(
                text, "", "", zero_shot_spk_id=prompt.voice_id, stream=False, speed=speed
            )
        else:
            # No zero_shot_spk_id here: with one, the frontend reuses the registered prompt_text
            # (the transcript) and the instruction would be silently dropped.
            outputs = self._model.inference_instruct2(
                text, instruct_prompt_text(instruction, self.version), str(prompt.wav_path), stream=False, speed=speed
            )
        chunks = [_to_float32(output["tts_speech"]) for output in outputs]
        audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        return self._check_audio(audio, text, f"CosyVoice{self.version} voice {prompt.voice_id}"), self.sample_rate

    def _register(self, prompt: CosyVoicePrompt) -> None:
        """Compute the prompt's speech tokens and speaker embedding once, then reuse them by id."""
        if prompt.voice_id in self._registered:
            return
        ok = self._model.add_zero_shot_spk(
            zero_shot_prompt_text(prompt.transcript, self.version), str(prompt.wav_path), prompt.voice_id
        )
        if ok is not True:
            raise WorkbenchError(f"CosyVoice could not register prompt {prompt.voice_id} ({prompt.wav_path})")
        self._registered.add(prompt.voice_id)


def _import_cosyvoice(repo: Path, matcha: Path) -> tuple[Any, Any]:
    for entry in (str(matcha), str(repo)):  # repo ends up first so its `cosyvoice` package wins
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    try:
        cli = importlib.import_module("cosyvoice.cli.cosyvoice")
        common = importlib.import_module("cosyvoice.utils.common")
    except (ImportError, OSError) as exc:
        raise WorkbenchError(
            f"cannot import CosyVoice from {repo}: {exc}. Install its requirements in this environment: "
            f"pip install -r {repo / 'requirements.txt'} (upstream pins Python 3.10, torch 2.3.1)"
        ) from exc
    loaded_from = Path(cli.__file__).resolve()
    if not loaded_from.is_relative_to(repo):
        raise WorkbenchError(
            f"a different cosyvoice package is already imported ({loaded_from}), not the one in {repo}"
        )
    return cli, common


def _clip_seed(seed: int, voice_id: str, style: str | None, speed: float, text: str) -> int:
    key = f"{seed}\x1f{voice_id}\x1f{style or ''}\x1f{speed:.4f}\x1f{text}".encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def _to_float32(speech: Any) -> np.ndarray:
    """A `tts_speech` chunk (torch tensor [1, T], maybe fp16 on GPU) as a flat float32 array."""
    if hasattr(speech, "detach"):
        speech = speech.detach().float().cpu().numpy()
    return np.asarray(speech, dtype=np.float32).reshape(-1)


def load_cosyvoice(cfg: Any, seed: int = 0) -> CosyVoiceHTTP | CosyVoiceLocal:
    """The backend described by a `synthesize.cosyvoice` config section (construction.core.config)."""
    prompts = load_prompt_bank(cfg.prompt_bank)
    if cfg.mode == "http":
        backend = CosyVoiceHTTP(cfg.base_url, cfg.sample_rate, cfg.timeout_s, cfg.retries, prompts=prompts,
                                version=cfg.version)
        backend.check_server()
        return backend
    return CosyVoiceLocal(cfg.repo_dir, cfg.model_dir, cfg.version, cfg.fp16, prompts=prompts, seed=seed)
