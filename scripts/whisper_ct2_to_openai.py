"""Turn a CTranslate2 Whisper model (model.bin) back into an openai-whisper checkpoint.

    python scripts/whisper_ct2_to_openai.py [CT2_DIR] OUT.pt     # default: the packaged base model

openai-whisper cannot download weights here, but the packaged CTranslate2 model holds the same
float16 weights, only renamed and with attention projections fused (q|k|v in self-attention, k|v in
cross-attention, with a zero bias for the bias-free key). The model.bin layout is the one
ctranslate2.specs.model_spec writes (binary version 6): header, then per variable its name, shape,
dtype and raw bytes, then aliases. This reverses that mapping; it is only for benchmarks and tests.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

# Order of ctranslate2's DataType enum (float32, int8, int16, int32, float16, bfloat16)
_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16, None)


def read_ct2_variables(path: Path) -> dict[str, np.ndarray]:
    """All variables of a CTranslate2 model.bin (aliases resolved), as numpy arrays."""
    data = Path(path).read_bytes()
    pos = 0

    def take(fmt: str):
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    def text() -> str:
        nonlocal pos
        size = take("H")
        pos += size
        return data[pos - size:pos - 1].decode()  # NUL-terminated

    version = take("I")
    if version != 6:
        raise ValueError(f"{path}: CTranslate2 binary version {version}, this reader knows 6")
    text()  # spec name
    take("I")  # spec revision
    variables = {}
    for _ in range(take("I")):
        name = text()
        shape = [take("I") for _ in range(take("B"))]
        dtype = _DTYPES[take("B")]
        size = take("I")
        if dtype is None:
            raise ValueError(f"{path}: {name} is bfloat16, not supported")
        variables[name] = np.frombuffer(data, dtype, size // np.dtype(dtype).itemsize, pos).reshape(shape)
        pos += size
    for _ in range(take("I")):
        alias, target = text(), text()
        variables[alias] = variables[target]
    return variables


def _linear(sd: dict, v: dict, src: str, dst: str, bias: bool = True) -> None:
    sd[f"{dst}.weight"] = v[f"{src}/weight"]
    if bias:
        sd[f"{dst}.bias"] = v[f"{src}/bias"]


def _norm(sd: dict, v: dict, src: str, dst: str) -> None:
    sd[f"{dst}.weight"], sd[f"{dst}.bias"] = v[f"{src}/gamma"], v[f"{src}/beta"]


def _split(sd: dict, v: dict, src: str, names: list[str]) -> None:
    weights = np.split(v[f"{src}/weight"], len(names))
    biases = np.split(v[f"{src}/bias"], len(names))
    for name, weight, bias in zip(names, weights, biases):
        sd[f"{name}.weight"] = weight
        if name.endswith(".key"):
            assert not bias.any(), f"{src}: Whisper's key projection has no bias"
        else:
            sd[f"{name}.bias"] = bias


def convert(model_dir: Path, out_path: Path) -> Path:
    """Write an openai-whisper checkpoint ({"dims", "model_state_dict"}) for the CT2 model."""
    import torch

    v = read_ct2_variables(Path(model_dir) / "model.bin")
    n_enc = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("/ffn/linear_0/weight"))
    n_dec = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("/ffn/linear_0/weight"))
    sd: dict[str, np.ndarray] = {}
    for side, layers in (("encoder", n_enc), ("decoder", n_dec)):
        for i in range(layers):
            src, dst = f"{side}/layer_{i}", f"{side}.blocks.{i}"
            _split(sd, v, f"{src}/self_attention/linear_0", [f"{dst}.attn.{n}" for n in ("query", "key", "value")])
            _linear(sd, v, f"{src}/self_attention/linear_1", f"{dst}.attn.out")
            _norm(sd, v, f"{src}/self_attention/layer_norm", f"{dst}.attn_ln")
            if side == "decoder":
                _linear(sd, v, f"{src}/attention/linear_0", f"{dst}.cross_attn.query")
                _split(sd, v, f"{src}/attention/linear_1", [f"{dst}.cross_attn.{n}" for n in ("key", "value")])
                _linear(sd, v, f"{src}/attention/linear_2", f"{dst}.cross_attn.out")
                _norm(sd, v, f"{src}/attention/layer_norm", f"{dst}.cross_attn_ln")
            _linear(sd, v, f"{src}/ffn/linear_0", f"{dst}.mlp.0")
            _linear(sd, v, f"{src}/ffn/linear_1", f"{dst}.mlp.2")
            _norm(sd, v, f"{src}/ffn/layer_norm", f"{dst}.mlp_ln")
    _linear(sd, v, "encoder/conv1", "encoder.conv1")
    _linear(sd, v, "encoder/conv2", "encoder.conv2")
    sd["encoder.positional_embedding"] = v["encoder/position_encodings/encodings"]
    _norm(sd, v, "encoder/layer_norm", "encoder.ln_post")
    sd["decoder.token_embedding.weight"] = v["decoder/embeddings/weight"]
    sd["decoder.positional_embedding"] = v["decoder/position_encodings/encodings"]
    _norm(sd, v, "decoder/layer_norm", "decoder.ln")

    state, mels = sd["encoder.conv1.weight"].shape[:2]
    dims = {"n_mels": mels, "n_audio_ctx": sd["encoder.positional_embedding"].shape[0], "n_audio_state": state,
            "n_audio_head": int(v["encoder/num_heads"]), "n_audio_layer": n_enc,
            "n_vocab": sd["decoder.token_embedding.weight"].shape[0],
            "n_text_ctx": sd["decoder.positional_embedding"].shape[0],
            "n_text_state": sd["decoder.token_embedding.weight"].shape[1],
            "n_text_head": int(v["decoder/num_heads"]), "n_text_layer": n_dec}
    tensors = {k: torch.from_numpy(np.array(a, dtype=np.float16)) for k, a in sd.items()}
    out_path = Path(out_path)
    torch.save({"dims": dims, "model_state_dict": tensors}, out_path)
    return out_path


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    if len(sys.argv) == 2:
        from construction.speech.asr import whisper_base_model_dir

        source = whisper_base_model_dir()
    else:
        source = Path(sys.argv[1])
    print(convert(source, Path(sys.argv[-1])))
