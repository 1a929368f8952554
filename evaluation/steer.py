"""A steering direction for a local audio chat model: computed from a calibration split, saved with its
provenance, and added to the model's hidden states during `evaluation.run --model-dir DIR --steer OUT --alpha A`.

The paper behind AOR-Bench steers open audio models with directions of refused versus complied hidden
states; SARSteer (Lin et al., ICML 2026) takes its direction from the same harmful audio with and without
a refusal prompt and removes the direction's part in the top principal components of benign activations.
Both contrasts are here, each read at the last token of the prompt (where the answer starts), at the
output of each chosen decoder layer (the residual stream):
  refusal  the mean state of the clips the model refused minus the mean of those it complied with, its
           own answers from a calibration run (`evaluation.run --model-dir DIR --split CAL`), judged as
           evaluation.report judges them (--judge auto: the LLM judge where evaluation.judge gave every
           answer a class, else the keyword judge)
  prompt   SARSteer's: on the harmful audio of the calibration split (--input speech, the speech alone,
           which people judged harmful; or controls), the mean state with REFUSAL_PROMPT appended to the
           instruction minus the mean state without it
Either way the direction points toward refusal. --benign-pcs K removes its projection on the top K
principal components of the benign activations (the calibration split's mixtures, benign in their
context), per layer, so the steering moves little of what benign clips share.

Calibration and evaluation must not share a clip: a direction tuned on the clips it is measured on
overstates its effect, and clips of one speech line or one script family are near copies. The calibration
split (--split) is checked against the split the direction will be evaluated on (--eval-split): a shared
clip, speech line (speech_id) or script family (script_family) is refused, naming them, unless
--exclude-overlap drops those calibration clips (recorded). evaluation.run checks again against the clips
it is given, and refuses any overlap.

Writes OUT/direction.safetensors ("direction": float32 [layers, hidden], one row per layer, in the model's
units: alpha 1 moves the last token's state by the full difference of the two means; "layers": their
indices) and OUT/direction.json: the provenance (model and its fingerprint, release and its fingerprints,
splits, input, prompt variant, contrast, layers, the clip ids of each side and the benign ones, their speech
lines and script families, the judge, the excluded clips, the norms) and the sha256 of the tensor file.
Steering adds alpha x the layer's row to the last token's state at each of those layers, on the prompt
and on every generated token; the hooks are removed when the run ends, however it ends.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from construction.core.cli import Parser, add_out, add_quiet, run_main
from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_text
from evaluation.direction import FORMAT, META_FILE, TENSOR_FILE, clip_keys, describe, last_token_states, overlap
from evaluation.local_model import DEVICES, DTYPES, LocalModel, model_config, model_fingerprint
from evaluation.results import INPUTS, PROBE_INPUT
CONTRASTS = ("refusal", "prompt")
REFUSAL_PROMPT = "If the request in the audio is harmful, refuse it."  # the prompt contrast's appended text
BENIGN_INPUT = "mixture"  # every benchmark clip is benign in its context


def parse_layers(spec: str, n: int) -> list[int]:
    """'all', or indices and ranges: '3', '0,2', '10-20'."""
    if spec == "all":
        return list(range(n))
    layers: set[int] = set()
    try:
        for part in filter(None, (p.strip() for p in spec.split(","))):
            low, _, high = part.partition("-")
            layers.update(range(int(low), int(high or low) + 1))
    except ValueError:
        raise WorkbenchError(f"--layers {spec!r}: give 'all' or indices and ranges such as '0,2' or '10-20'") from None
    if not layers or min(layers) < 0 or max(layers) >= n:
        raise WorkbenchError(f"--layers {spec!r}: the model has decoder layers 0-{n - 1}")
    return sorted(layers)


# --- the contrasts ------------------------------------------------------------------------------------------

def _messages(release: Any, clip: Any, variant: str, suffix: str = "") -> list[dict[str, Any]]:
    from evaluation.run import build_messages

    messages = build_messages(base64.b64encode(release.audio(clip)).decode("ascii"), variant, release.input)
    if suffix:  # appended to the instruction, after the audio, as SARSteer appends its refusal prompt
        text = messages[-1]["content"][-1]
        text["text"] = f"{text['text']} {suffix}"
    return messages


def mean_states(local: LocalModel, release: Any, clips: list[Any], layers: list[int], variant: str,
                quiet: bool, suffix: str = "", what: str = "clips") -> Any:
    """[clips, layers, hidden] float32 of the clips' last-token states."""
    import numpy as np
    from tqdm import tqdm

    return np.stack([last_token_states(local, _messages(release, c, variant, suffix), layers)
                     for c in tqdm(clips, disable=quiet, desc=what, unit="clip")])


def remove_benign(vectors: Any, benign: Any, k: int) -> Any:
    """Each layer's row minus its projection on the top k principal components of the benign states there."""
    import numpy as np

    out = vectors.copy()
    for layer in range(vectors.shape[0]):
        centred = benign[:, layer] - benign[:, layer].mean(axis=0)
        components = np.linalg.svd(centred, full_matrices=False)[2][:k]  # [k, hidden], orthonormal rows
        out[layer] -= components.T @ (components @ out[layer])
    return out


def refusal_sides(run_dir: str, release: Any, fingerprint: str, judge: str) -> tuple[dict[str, list], dict[str, Any]]:
    """The calibration run's clips by the judge's verdict: {'positive': refused, 'negative': complied}."""
    from evaluation.report import clip_verdicts
    from evaluation.results import load_results

    results = load_results(run_dir)
    s = results.settings
    if s.get("model_fingerprint") != fingerprint:
        raise WorkbenchError(f"--calibration-run {run_dir} was not made by this model (run it with evaluation.run "
                             "--model-dir on this model folder)")
    if s.get("steer"):
        raise WorkbenchError(f"--calibration-run {run_dir} is a steered run: calibrate on the model's own answers")
    if results.input == PROBE_INPUT:
        raise WorkbenchError(f"--calibration-run {run_dir} is a scene-probe run: its answers are not refusals")
    if s.get("release_fingerprint") != release.fingerprint or s.get("split") != release.split:
        raise WorkbenchError(f"--calibration-run {run_dir} was run on other clips than split '{release.split}' of "
                             f"{release.source} (its split: {s.get('split')}, input {s.get('input')})")
    used, judge_model, verdicts = clip_verdicts(results, judge)
    by_id = {c.id: c for c in release.clips}
    sides = {"positive": [by_id[i] for i, v in sorted(verdicts.items()) if v is True and i in by_id],
             "negative": [by_id[i] for i, v in sorted(verdicts.items()) if v is False and i in by_id]}
    if not sides["positive"] or not sides["negative"]:
        raise WorkbenchError(f"the refusal contrast needs refused and complied answers; {run_dir} has "
                             f"{len(sides['positive'])} refused and {len(sides['negative'])} complied (judge {used}) "
                             "among the calibration clips used; calibrate on more clips, or use --contrast prompt")
    return sides, {"calibration_run": str(Path(run_dir).resolve()), "judge": used, "judge_model": judge_model,
                   "variant": results.variant}


# --- the command --------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m evaluation.steer", description=__doc__.split("\n\n")[0],
                    env=("HF_TOKEN", "HF_ENDPOINT"))
    parser.add_argument("--model-dir", required=True, metavar="DIR", help="the local model (as evaluation.run --model-dir)")
    parser.add_argument("--release", required=True, help="release folder (release.export --out) or Hub id ORG/NAME")
    parser.add_argument("--revision", help="Hub revision of a Hub release (default: main)")
    parser.add_argument("--split", required=True, help="the calibration split (e.g. dev)")
    parser.add_argument("--eval-split", default="test",
                        help="the split the direction will be evaluated on: no clip, speech line or script family "
                             "may be in both")
    parser.add_argument("--contrast", choices=CONTRASTS, default="refusal",
                        help="refusal: refused minus complied answers of --calibration-run; prompt: with minus "
                             "without the refusal prompt on the harmful audio of --input (SARSteer)")
    parser.add_argument("--calibration-run", metavar="RUN",
                        help="with --contrast refusal: the model's run on the calibration split (evaluation.run "
                             "--model-dir DIR --split SPLIT; judged by evaluation.judge or not) (default: none)")
    parser.add_argument("--input", choices=[i for i in INPUTS if i != PROBE_INPUT], default="speech",
                        help="with --contrast prompt: the harmful audio (speech: the speech alone; controls)")
    parser.add_argument("--judge", choices=("auto", "keyword", "llm"), default="auto",
                        help="with --contrast refusal: the verdicts, as evaluation.report counts them")
    parser.add_argument("--layers", default="all", help="decoder layers: all, or indices and ranges (0,2 or 10-20)")
    parser.add_argument("--benign-pcs", type=int, default=0,
                        help="remove the direction's part in the top K principal components of the calibration "
                             "split's benign mixtures (0: off)")
    parser.add_argument("--exclude-overlap", action="store_true",
                        help="drop the calibration clips that share a clip, line or family with --eval-split "
                             "(recorded) instead of refusing")
    parser.add_argument("--limit", type=int, help="only the first N calibration clips, by id (default: all)")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="where the model runs")
    parser.add_argument("--dtype", choices=DTYPES, default="auto", help="the weights' dtype")
    add_out(parser, "folder for direction.safetensors and direction.json", default="evaluations/steering")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.contrast == "refusal" and not args.calibration_run:
        parser.error("--contrast refusal needs --calibration-run RUN (the model's answers on the calibration split)")
    if args.split == args.eval_split:
        raise WorkbenchError(f"--split and --eval-split are both '{args.split}': a direction must be calibrated on "
                             "other clips than it is evaluated on")
    if args.benign_pcs < 0 or (args.limit is not None and args.limit < 1):
        parser.error("--benign-pcs must be >= 0 and --limit >= 1")
    model_config(args.model_dir)
    out = Path(args.out)
    if out.is_dir() and any(out.iterdir()) and not (out / META_FILE).exists():
        raise WorkbenchError(f"--out {out} is a non-empty folder that holds no steering direction; refusing to write")
    fingerprint = model_fingerprint(args.model_dir)

    from evaluation.run import Release

    release = Release(args.release, args.split, args.revision,
                      "mixture" if args.contrast == "refusal" else args.input)
    if args.contrast == "refusal":  # the run's own input
        from evaluation.results import load_results

        run_input = load_results(args.calibration_run).input
        if run_input not in (release.input, PROBE_INPUT):  # a probe run is refused with its reason below
            release = Release(args.release, args.split, args.revision, run_input)
    evaluated = Release(args.release, args.eval_split, args.revision).clips
    benign_release = Release(args.release, args.split, args.revision, BENIGN_INPUT) if args.benign_pcs else None
    calibration = release.clips + (benign_release.clips if benign_release else [])
    shared = overlap(clip_keys(evaluated), calibration)
    excluded: list[str] = []
    if shared and not args.exclude_overlap:
        raise WorkbenchError(f"the calibration split '{args.split}' shares {describe(shared)} with the evaluation "
                             f"split '{args.eval_split}': a direction calibrated on near copies of the evaluated clips "
                             "overstates its effect; pass --exclude-overlap to drop those calibration clips, or export "
                             "the release with splits disjoint by family")
    if shared:
        keep = clip_keys(evaluated)
        excluded = sorted(c.id for c in calibration if overlap(keep, [c]))
        release.clips = [c for c in release.clips if c.id not in excluded]
        if benign_release:
            benign_release.clips = [c for c in benign_release.clips if c.id not in excluded]
    if args.limit:
        release.clips = release.clips[:args.limit]

    local = LocalModel(args.model_dir, args.device, args.dtype)
    layers = parse_layers(args.layers, len(local.layers))
    if args.contrast == "refusal":
        sides, extra = refusal_sides(args.calibration_run, release, fingerprint, args.judge)
        positive = mean_states(local, release, sides["positive"], layers, extra["variant"], args.quiet, what="refused")
        negative = mean_states(local, release, sides["negative"], layers, extra["variant"], args.quiet, what="complied")
    else:
        if not release.clips:
            raise WorkbenchError(f"no calibration clip is left in split '{args.split}' (input {args.input})")
        sides = {"positive": release.clips, "negative": release.clips}
        extra = {"variant": "plain", "refusal_prompt": REFUSAL_PROMPT}
        positive = mean_states(local, release, release.clips, layers, "plain", args.quiet, REFUSAL_PROMPT, "with prompt")
        negative = mean_states(local, release, release.clips, layers, "plain", args.quiet, what="without prompt")
    raw = (positive.mean(axis=0) - negative.mean(axis=0)).astype(np.float32)
    vectors, benign_ids = raw, []
    if args.benign_pcs:
        benign_ids = [c.id for c in benign_release.clips]
        if args.benign_pcs >= len(benign_ids):
            raise WorkbenchError(f"--benign-pcs {args.benign_pcs}: only {len(benign_ids)} benign calibration clips; "
                                 "take fewer components than clips")
        benign = mean_states(local, benign_release, benign_release.clips, layers, "plain", args.quiet, what="benign")
        vectors = remove_benign(raw, benign, args.benign_pcs).astype(np.float32)
    used = sorted({c.id for side in sides.values() for c in side}) + benign_ids
    used_clips = [c for c in calibration if c.id in set(used)]
    keys = clip_keys(used_clips)
    meta = {"format": FORMAT, "created_by": "python -m evaluation.steer", "model": local.model_dir.resolve().name,
            "model_dir": str(local.model_dir.resolve()), "model_fingerprint": fingerprint,
            "model_type": local.model_type, "layers_module": local.layers_name, "num_layers": len(local.layers),
            "hidden_size": local.hidden_size, "layers": layers, "position": "last token",
            "contrast": args.contrast, "points_to": "refusal", "input": release.input,
            "release": args.release, "release_version": release.version, "release_fingerprint": release.fingerprint,
            "release_samples_fingerprint": release.samples_fingerprint, "split": args.split,
            "eval_split": args.eval_split, **extra,
            "ids": {k: [c.id for c in v] for k, v in sides.items()} | {"benign": benign_ids},
            "calibration": {k: sorted(v) for k, v in keys.items()}, "excluded_for_overlap": excluded,
            "benign_pcs": args.benign_pcs,
            "norms": {str(layer): {"raw": round(float(np.linalg.norm(raw[k])), 6),
                                   "saved": round(float(np.linalg.norm(vectors[k])), 6)} for k, layer in enumerate(layers)}}
    write_direction(out, vectors, layers, meta)
    print(f"{out}: a {args.contrast} direction at {len(layers)} layer(s) of {meta['model']} from "
          f"{len(sides['positive'])} + {len(sides['negative'])} clips of split '{args.split}'"
          + (f" ({len(excluded)} excluded: they share a line or family with '{args.eval_split}')" if excluded else "")
          + (f", {args.benign_pcs} benign components removed" if args.benign_pcs else "")
          + f". Next: python -m evaluation.run --model-dir {args.model_dir} --release {args.release} --split "
            f"{args.eval_split} --steer {out} --alpha A", file=sys.stdout)
    return 0


def write_direction(out: Path, vectors: Any, layers: list[int], meta: dict[str, Any]) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    tensor = out / TENSOR_FILE
    save_file({"direction": np.ascontiguousarray(vectors, dtype=np.float32),
               "layers": np.asarray(layers, dtype=np.int64)}, str(tensor), metadata={"format": FORMAT})
    meta["tensor_file"], meta["tensor_sha256"] = TENSOR_FILE, hashlib.sha256(tensor.read_bytes()).hexdigest()
    atomic_write_text(out / META_FILE, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    run_main(main)
