"""The local backend of evaluation.run (and the model evaluation.steer reads): an open audio chat model run
in this process through transformers, from a folder on disk, so its hidden states can be read and steered.

A model folder is what `save_pretrained` (or `hf download ORG/NAME --local-dir DIR`) leaves: config.json,
the weights, and the processor's files (the feature extractor, the tokenizer, the chat template). It is
loaded with local_files_only: nothing is fetched from the Hub. The model and the processor are the ones
transformers' auto classes pick for the folder's config (AutoModelForMultimodalLM, AutoProcessor), so a
real checkpoint and the tiny random models the tests build go through the same code.

Each clip is the chat evaluation.run builds for an endpoint (evaluation.run.build_messages: the optional
system prompt, the audio, the instruction), turned into the model's own chat format by its processor's
chat template; the WAV is decoded and resampled to the feature extractor's rate, and the processor turns
it into the model's audio features. Generation is greedy (temperature 0), at most --max-tokens new
tokens, one clip at a time. LocalChat answers through the endpoint's interface (evaluation.endpoint:
complete(messages, params, key) -> Reply) with the same on-disk answer cache, so evaluation.run's loop,
records and results folder are the same for both backends.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from construction.core.redact import redact
from construction.core.workspace import atomic_write_text
from evaluation.endpoint import MAX_ANSWER_CHARS, REDACT_MARGIN, Reply, well_formed

# config.json's model_type -> what runs; the classes are transformers' auto classes for it
MODEL_TYPES = {"qwen2_audio": "Qwen2-Audio (e.g. Qwen/Qwen2-Audio-7B-Instruct)",
               "qwen2_5_omni": "Qwen2.5-Omni (text answers; its speech generator is not loaded)"}
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
WEIGHT_SUFFIXES = (".safetensors", ".bin")
SAMPLE_BYTES = 1 << 20  # the fingerprint reads this much of each end of every weight file


def model_config(model_dir: str | Path) -> dict[str, Any]:
    """config.json of a supported local model; anything else is a clear error."""
    path = Path(model_dir)
    if not path.is_dir():
        raise WorkbenchError(f"--model-dir {model_dir} is not a folder: give a local model folder (config.json, "
                             "its weights and its processor files, as save_pretrained or `hf download ... "
                             "--local-dir DIR` leave them); models are never fetched from the Hub here")
    try:
        config = json.loads((path / "config.json").read_text())
    except FileNotFoundError:
        raise WorkbenchError(f"{model_dir} has no config.json: not a transformers model folder") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{path / 'config.json'} is not valid JSON: {exc.msg}") from None
    kind = config.get("model_type")
    if kind not in MODEL_TYPES:
        raise WorkbenchError(f"{model_dir} holds a {kind!r} model (config.json model_type), not an audio chat model "
                             f"this backend runs; it runs: {'; '.join(f'{k}: {v}' for k, v in MODEL_TYPES.items())}")
    return config


def model_fingerprint(model_dir: str | Path) -> str:
    """sha256 over config.json, generation_config.json and each weight file's name, size and first and last
    MiB: two models differ in it (a 15 GB checkpoint is not read whole on every run)."""
    path = Path(model_dir)
    digest = hashlib.sha256()
    for name in ("config.json", "generation_config.json"):
        if (path / name).is_file():
            digest.update(f"{name}\0".encode() + (path / name).read_bytes())
    weights = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not weights:
        raise WorkbenchError(f"{model_dir} has no weight files (*.safetensors, *.bin)")
    for file in weights:
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with open(file, "rb") as f:
            digest.update(f.read(SAMPLE_BYTES))
            f.seek(max(0, size - SAMPLE_BYTES))
            digest.update(f.read(SAMPLE_BYTES))
    return digest.hexdigest()


def decode_wav(data: bytes, rate: int):
    """WAV bytes -> float32 mono at `rate` (the feature extractor's), as the processor takes it."""
    import numpy as np
    import soundfile as sf
    import soxr

    audio, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    mono = audio.mean(axis=1)
    return np.ascontiguousarray(soxr.resample(mono, sr, rate) if sr != rate else mono, dtype=np.float32)


def to_conversation(messages: list[dict[str, Any]], rate: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """evaluation.run's OpenAI-style chat -> (the chat in transformers' format, the audio arrays in order)."""
    conversation, audio = [], []
    for message in messages:
        if isinstance(message["content"], str):
            conversation.append({"role": message["role"], "content": message["content"]})
            continue
        parts = []
        for part in message["content"]:
            if part["type"] == "input_audio":
                audio.append(decode_wav(base64.b64decode(part["input_audio"]["data"]), rate))
                parts.append({"type": "audio", "audio_url": f"clip-{len(audio)}.wav"})  # the template's placeholder
            else:
                parts.append({"type": "text", "text": part["text"]})
        conversation.append({"role": message["role"], "content": parts})
    return conversation, audio


def decoder_layers(model: Any) -> tuple[str, list[Any]]:
    """(its name, the layers) of the language model's decoder stack: the residual stream steering reads and
    moves. The audio encoder's layers (and Qwen2.5-Omni's speech generator's) are not it."""
    import torch

    for name, module in model.named_modules():
        if (isinstance(module, torch.nn.ModuleList) and len(module) and not name.startswith(("talker", "token2wav"))
                and all(type(m).__name__.endswith("DecoderLayer") for m in module)):
            return name, list(module)
    raise WorkbenchError(f"{type(model).__name__} has no decoder layer stack this backend recognises")


class LocalModel:
    """A local audio chat model and its processor, loaded once: prompts in, greedy answers out."""

    def __init__(self, model_dir: str | Path, device: str = "auto", dtype: str = "auto"):
        config = model_config(model_dir)
        import torch
        import transformers
        from transformers import AutoModelForMultimodalLM, AutoProcessor

        transformers.utils.logging.disable_progress_bar()  # the run's own bar counts clips
        self.torch, self.model_dir, self.model_type = torch, Path(model_dir), config["model_type"]
        if device == "cuda" and not torch.cuda.is_available():
            raise WorkbenchError("--device cuda: torch sees no CUDA device here (this venv's torch is the CPU build; "
                                 "on a GPU machine install a CUDA build of torch)")
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
        try:
            self.processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
            model = AutoModelForMultimodalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch_dtype)
        except (OSError, ValueError, KeyError) as exc:
            raise WorkbenchError(f"cannot load the model in {model_dir}: {type(exc).__name__}: {exc}") from None
        if self.model_type == "qwen2_5_omni" and getattr(model, "has_talker", False):
            model.disable_talker()  # text answers only: the speech generator would take memory for nothing
        self.model = model.to(self.device).eval()
        self.layers_name, self.layers = decoder_layers(self.model)
        self.sampling_rate = int(self.processor.feature_extractor.sampling_rate)
        self.hidden_size = int(self.model.get_input_embeddings().weight.shape[1])
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        self.lock = threading.Lock()  # one generation at a time: hooks and the model are shared

    def inputs(self, messages: list[dict[str, Any]]) -> Any:
        """The processor's tensors for one clip's chat (evaluation.run.build_messages), on the model's device."""
        conversation, audio = to_conversation(messages, self.sampling_rate)
        text = self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        batch = self.processor(text=text, audio=audio or None, sampling_rate=self.sampling_rate, return_tensors="pt")
        dtype = next(self.model.parameters()).dtype
        return {k: (v.to(self.device, dtype) if v.is_floating_point() else v.to(self.device)) for k, v in batch.items()}

    def generate(self, inputs: dict[str, Any], max_new_tokens: int) -> tuple[str, str]:
        """(the answer, finish_reason: stop at an end-of-turn token, length at the cap)."""
        args: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": False}
        if self.model_type == "qwen2_5_omni":  # its generate routes thinker_* arguments to the text model
            args = {"thinker_max_new_tokens": max_new_tokens, "thinker_do_sample": False, "generation_mode": "text"}
        with self.lock, self.torch.no_grad():
            out = self.model.generate(**inputs, **args)
        sequence = getattr(out, "sequences", out)[0, inputs["input_ids"].shape[1]:]
        finish = "stop" if len(sequence) and int(sequence[-1]) in self.eos_ids else "length"
        return self.processor.tokenizer.decode(sequence, skip_special_tokens=True), finish

    def forward(self, inputs: dict[str, Any]) -> None:
        """One forward pass over the prompt (no answer): what hooks on the layers read (evaluation.steer)."""
        model = self.model.thinker if self.model_type == "qwen2_5_omni" else self.model
        with self.lock, self.torch.no_grad():
            model(**inputs)


class LocalChat:
    """ChatEndpoint's interface over a LocalModel: complete(messages, params, key) -> Reply, answers cached
    on disk by request hash as the endpoint caches them. A clip whose audio cannot be decoded, or whose
    generation fails, comes back as a Reply with the reason; the loading failed already if the model did."""

    what = "local model"

    def __init__(self, local: LocalModel, model: str, cache_dir: Path):
        self.local, self.model, self.cache_dir = local, model, cache_dir
        self.sent = 0

    def complete(self, messages: list[dict[str, Any]], params: dict[str, Any], key: str) -> Reply:
        path = self.cache_dir / f"{key}.json"
        if path.exists():
            cached = json.loads(path.read_text())
            return Reply(cached["text"], cached.get("finish_reason"), None, True, key, cached.get("truncated", False))
        self.sent += 1
        try:
            inputs = self.local.inputs(messages)
        except (ValueError, RuntimeError) as exc:  # soundfile raises RuntimeError subclasses on bad audio
            return Reply(None, None, f"bad_audio: {_cut(str(exc), 500)}", False, key)
        try:
            text, finish = self.local.generate(inputs, int(params["max_tokens"]))
        except (ValueError, RuntimeError) as exc:  # e.g. out of memory on a long clip
            return Reply(None, None, f"generation_failed: {type(exc).__name__}: {_cut(str(exc), 500)}", False, key)
        if not text.strip():
            return Reply(None, finish, f"empty_response (finish_reason {finish})", False, key)
        text, truncated = _clean(text)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"model": self.model, "text": text, "finish_reason": finish,
                                            "truncated": truncated}, ensure_ascii=False))
        return Reply(text, finish, None, False, key, truncated)


def _cut(text: str, limit: int) -> str:
    return well_formed(redact(text[:limit + REDACT_MARGIN]))[:limit]


def _clean(text: str) -> tuple[str, bool]:
    """The answer as the endpoint stores one: secret-looking strings masked, cut at MAX_ANSWER_CHARS."""
    window = text[:MAX_ANSWER_CHARS + REDACT_MARGIN]
    clean = well_formed(redact(window))
    return clean[:MAX_ANSWER_CHARS], len(text) > len(window) or len(clean) > MAX_ANSWER_CHARS
