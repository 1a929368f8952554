"""A saved steering direction and the hooks that apply it: what `evaluation.run --steer DIR --alpha A` needs,
apart from the command that computes a direction (evaluation.steer, which asks evaluation.run how a clip is
put to the model, so the run cannot import it back).

A direction folder holds direction.safetensors ("direction": float32 [layers, hidden], "layers") and
direction.json (its provenance and the tensor's sha256). Steering adds alpha x the layer's row to the last
token's state at each of those layers, on the prompt and on every generated token; the hooks are removed
when the run ends, however it ends. A run on another model, or on clips that share a clip, a speech line or a
script family with the calibration, is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from evaluation.local_model import LocalModel

FORMAT = "aor-bench-steering/1"
META_FILE, TENSOR_FILE = "direction.json", "direction.safetensors"


# --- reading the model -----------------------------------------------------------------------------------

def _hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


@contextlib.contextmanager
def capture(local: LocalModel, layers: list[int]) -> Iterator[dict[int, Any]]:
    """Hooks that keep the last token's state at the output of each layer; removed on leaving."""
    seen: dict[int, Any] = {}

    def keep(index: int):
        def hook(module, args, output):
            seen[index] = _hidden(output)[0, -1].detach().float().cpu().numpy()
        return hook

    handles = [local.layers[i].register_forward_hook(keep(i)) for i in layers]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


def last_token_states(local: LocalModel, messages: list[dict[str, Any]], layers: list[int]) -> Any:
    """[len(layers), hidden] float32: the prompt's last-token state after each layer."""
    import numpy as np

    with capture(local, layers) as seen:
        local.forward(local.inputs(messages))
    return np.stack([seen[i] for i in layers])


@contextlib.contextmanager
def steering(local: LocalModel, layers: list[int], vectors: Any, alpha: float) -> Iterator[None]:
    """Add alpha x vectors[k] to the last token's state at the output of layers[k], for every forward pass
    inside the block (the prompt, then each generated token); the hooks are removed on leaving."""
    torch = local.torch

    def add(vector: Any):
        def hook(module, args, output):
            hidden = _hidden(output).clone()
            hidden[:, -1] += vector.to(hidden.dtype)
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden
        return hook

    handles = []
    try:
        for index, row in zip(layers, vectors, strict=True):
            shift = torch.as_tensor(row * alpha, dtype=torch.float32, device=local.device)
            handles.append(local.layers[index].register_forward_hook(add(shift)))
        yield
    finally:
        for handle in handles:
            handle.remove()


# --- the saved direction ----------------------------------------------------------------------------------

@dataclass
class Direction:
    folder: Path
    meta: dict[str, Any]
    vectors: Any  # float32 [layers, hidden]

    @property
    def layers(self) -> list[int]:
        return list(self.meta["layers"])

    def check_run(self, fingerprint: str, clips: list[Any]) -> None:
        """Refuse a run on another model, or on clips that share a clip, a line or a family with the calibration."""
        if fingerprint != self.meta["model_fingerprint"]:
            raise WorkbenchError(f"the steering direction in {self.folder} was computed on another model "
                                 f"({self.meta['model_dir']}, fingerprint {self.meta['model_fingerprint'][:12]}...); "
                                 "compute one for this model with python -m evaluation.steer")
        shared = overlap(self.meta["calibration"], clips)
        if shared:
            raise WorkbenchError(f"the steering direction in {self.folder} was calibrated on clips that share "
                                 f"{describe(shared)} with the clips of this run: a direction measured on its own "
                                 "calibration overstates its effect; run another split (its calibration split was "
                                 f"'{self.meta['split']}', its evaluation split '{self.meta['eval_split']}')")

    def run_settings(self, alpha: float) -> dict[str, Any]:
        """What run.json records of the steering (the full provenance stays in the direction's folder)."""
        return {"direction": str(self.folder.resolve()), "sha256": self.meta["tensor_sha256"], "alpha": alpha,
                "contrast": self.meta["contrast"], "layers": self.layers, "benign_pcs": self.meta["benign_pcs"],
                "calibration_split": self.meta["split"], "release_version": self.meta["release_version"]}

    def applied(self, local: LocalModel, alpha: float) -> contextlib.AbstractContextManager:
        if max(self.layers) >= len(local.layers) or self.vectors.shape[1] != local.hidden_size:
            raise WorkbenchError(f"the steering direction in {self.folder} does not fit this model's layers")
        return steering(local, self.layers, self.vectors, alpha)


def load_direction(path: str | Path) -> Direction:
    """A direction folder (or its direction.json), its tensor checked against the recorded sha256."""
    folder = Path(path)
    folder = folder.parent if folder.name == META_FILE else folder
    try:
        meta = json.loads((folder / META_FILE).read_text())
    except FileNotFoundError:
        raise WorkbenchError(f"--steer {path}: no {META_FILE} there (make one with python -m evaluation.steer)") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{folder / META_FILE} is not valid JSON: {exc.msg}") from None
    if meta.get("format") != FORMAT:
        raise WorkbenchError(f"{folder / META_FILE} is not an {FORMAT} direction")
    tensor = folder / TENSOR_FILE
    if not tensor.is_file() or hashlib.sha256(tensor.read_bytes()).hexdigest() != meta.get("tensor_sha256"):
        raise WorkbenchError(f"{tensor} is missing or does not match the sha256 in {META_FILE} (changed after "
                             "evaluation.steer wrote it?)")
    from safetensors.numpy import load_file

    data = load_file(tensor)
    if [int(i) for i in data["layers"]] != meta["layers"]:
        raise WorkbenchError(f"{tensor}: its layers disagree with {META_FILE}")
    return Direction(folder, meta, data["direction"])


# --- calibration and evaluation, apart ----------------------------------------------------------------------

def clip_keys(clips: list[Any]) -> dict[str, set[str]]:
    """The clip ids (a control's sample too), speech lines and script families of clips."""
    return {"clip_ids": {c.id for c in clips} | {c.control_of for c in clips if c.control_of},
            "speech_ids": {c.speech_id for c in clips if c.speech_id},
            "script_families": {c.script_family for c in clips if c.script_family}}


def overlap(calibration: dict[str, Any], clips: list[Any]) -> dict[str, list[str]]:
    """What `clips` share with a calibration's ids, lines and families (empty: nothing)."""
    theirs = clip_keys(clips)
    return {key: sorted(set(calibration[key]) & theirs[key]) for key in theirs if set(calibration[key]) & theirs[key]}


def describe(shared: dict[str, list[str]]) -> str:
    names = {"clip_ids": "clip(s)", "speech_ids": "speech line(s)", "script_families": "script famil(ies)"}
    return "; ".join(f"{len(v)} {names[k]} ({', '.join(v[:4])}{', ...' if len(v) > 4 else ''})"
                     for k, v in shared.items())
