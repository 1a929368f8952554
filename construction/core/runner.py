"""Run a stage over the previous stage's manifest: skip what is done, batch, append, report.

A stage is plain: `setup()` loads its models once, `process(batch)` turns samples into samples or
`Rejected(sample, reason)`. Where it runs (this process or a pool of worker processes) is decided
here, never inside the stage. Results are written in input order, so an interrupted run followed by a
rerun leaves the same manifest as one uninterrupted run.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from construction.core.errors import WorkbenchError
from construction.core.record import Sample
from construction.core.timing import add as add_timing
from construction.core.workspace import Rejected, Workspace, require_manifest


class Stage(Protocol):
    name: str  # manifest this stage writes
    input_stage: str  # manifest it reads
    max_jobs: int | None  # cap on worker processes (None: no cap), e.g. 1 for a multi-threaded model

    def setup(self) -> None: ...

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]: ...


def reason_code(reason: str) -> str:
    """Reasons read 'code: detail'; stats count by code."""
    return reason.split(":", 1)[0].strip()


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


_worker_stage: Stage | None = None
_worker_setup_error: Exception | None = None


def _exit_with_parent(parent_pid: int) -> None:
    """A worker whose parent was killed (SIGKILL leaves no time to stop the pool) would live on with its
    model loaded; it is re-parented then, which this notices within a second."""
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(1)


def _worker_init(stage: Stage, parent_pid: int) -> None:
    global _worker_stage, _worker_setup_error
    # Ctrl-C reaches the whole process group; it is the parent's to handle (it ends the pool), so a worker
    # ignores it. It was born with SIGINT blocked (_spawning): one pressed while it started is dropped here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    _worker_stage = stage
    try:
        stage.setup()
    except Exception as exc:  # re-raised with each batch, so the parent sees the real message
        _worker_setup_error = exc


def _clock_take(stage: Stage) -> dict | None:
    clock = getattr(stage, "clock", None)
    return clock.take() if clock is not None else None


def _worker_process(batch: list[Sample]) -> tuple[list[Sample | Rejected], dict | None]:
    if _worker_setup_error is not None:
        raise _worker_setup_error
    assert _worker_stage is not None
    return _worker_stage.process(batch), _clock_take(_worker_stage)


def _pending_batches(ws: Workspace, stage: Stage, done: set[str], batch_size: int) -> Iterator[list[Sample]]:
    """Batches of samples not done yet. A stage whose results depend on a sample's batch-mates
    (`whole_batches`, e.g. ASR decoding a batch of clips together) gets fixed chunks of the input,
    done samples included, so a resumed run sees exactly the batches of an uninterrupted one."""
    whole = getattr(stage, "whole_batches", False)
    batch: list[Sample] = []
    for sample in ws.read_samples(stage.input_stage):
        if sample.sample_id not in done or whole:
            batch.append(sample)
        if len(batch) == batch_size:
            if any(s.sample_id not in done for s in batch):
                yield batch
            batch = []
    if batch and any(s.sample_id not in done for s in batch):
        yield batch


class _RayStageActor:
    """A Ray Data actor: sets the stage up once, then turns one pre-formed batch (a JSON line) into
    its results, so Ray sees exactly the batches the local executor would."""

    def __init__(self, stage: Stage):
        self.stage = stage
        stage.setup()

    def __call__(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = []
        for line in rows["text"]:
            batch = [Sample.model_validate(row) for row in json.loads(line)]
            results = self.stage.process(batch)
            out.append(json.dumps({"rows": [["rejected", r.to_json()] if isinstance(r, Rejected)
                                            else ["kept", r.to_json()] for r in results],
                                   "timing": _clock_take(self.stage)}))
        return {"results": np.array(out, dtype=object)}


def _ray_results(stage: Stage, batches: Iterator[list[Sample]], jobs: int, ws: Workspace,
                 ray_address: str | None, num_gpus: float) -> Iterator[tuple[list[Sample | Rejected], dict | None]]:
    # batches are streamed to a file Ray reads lazily: nothing holds the whole manifest in memory
    path = ws.cache_dir("ray") / f"{stage.name}.batches.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for batch in batches:
            f.write(json.dumps([s.model_dump(mode="json") for s in batch]) + "\n")
    if path.stat().st_size == 0:
        return  # nothing left to do (a resumed run): no Ray start-up, which costs seconds

    import ray

    if not ray.is_initialized():
        # a local instance gets one CPU per actor plus one for Ray Data's read tasks (with no spare
        # CPU the read never schedules and the run stalls); a cluster brings its own resources
        ray.init(address=ray_address, num_cpus=None if ray_address else jobs + 1, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # results come back in input order
    context.enable_progress_bars = False
    dataset = ray.data.read_text(str(path)).map_batches(
        _RayStageActor, fn_constructor_args=(stage,), batch_size=1, concurrency=jobs,
        num_cpus=0 if num_gpus else 1, num_gpus=num_gpus,
        # Ray starts workers with OMP_NUM_THREADS=1; BLAS then sums in another order than in a local
        # process (Whisper features differ in the last bits and a transcript can flip): give actors
        # the thread count a local process would use
        runtime_env={"env_vars": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(default_jobs()))}})
    for row in dataset.iter_rows():
        answer = json.loads(row["results"])
        yield [Rejected(Sample.model_validate(json.loads(text)["sample"]), json.loads(text)["reason"])
               if kind == "rejected" else Sample.model_validate_json(text)
               for kind, text in answer["rows"]], answer["timing"]


def _results_in_order(stage: Stage, batches: Iterator[list[Sample]],
                      jobs: int) -> Iterator[tuple[list[Sample | Rejected], dict | None]]:
    """Each batch's results, in input order, with what its worker's clock timed (construction.core.timing)."""
    if jobs == 1:
        stage.setup()
        for batch in batches:
            yield stage.process(batch), _clock_take(stage)
        return
    # spawn: models are loaded in the workers, never forked from a parent holding threads
    context = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_init, initargs=(stage, os.getpid()))
    try:
        in_flight: deque[cf.Future] = deque()
        for batch in batches:
            with _spawning():  # a submit may start a worker
                in_flight.append(pool.submit(_worker_process, batch))
            if len(in_flight) >= 2 * jobs:  # bounded: memory stays flat however long the manifest
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    except BaseException:  # Ctrl-C, an error, or the caller stopped reading: the workers' work is not wanted
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


@contextlib.contextmanager
def _spawning() -> Iterator[None]:
    """SIGINT blocked while a worker may be started: the worker inherits the blocked signal through exec (and
    drops what is pending once it ignores it, _worker_init), so a Ctrl-C while it imports its modules prints no
    traceback of its own; this process gets its Ctrl-C when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _id(result: Sample | Rejected) -> str:
    return result.sample.sample_id if isinstance(result, Rejected) else result.sample_id


def run_stage(ws: Workspace, stage: Stage, *, jobs: int | None = None, batch_size: int = 8,
              restart: bool = False, retry_rejected: bool = False, progress: bool = True,
              executor: str = "local", ray_address: str | None = None, num_gpus: float = 0.0) -> dict[str, Any]:
    """Run `stage` over `ws`; returns the stage's stats (also written to stats/<stage>.json)."""
    require_manifest(ws.root, stage.name, stage.input_stage)
    jobs = jobs or default_jobs()
    if stage.max_jobs:
        jobs = min(jobs, stage.max_jobs)
    with ws.lock():
        ws.check_lineage(stage.input_stage)
        if restart:
            ws.clear_stage(stage.name)
        elif retry_rejected:
            ws.forget_rejected(stage.name)
        done = ws.done_ids(stage.name)
        total = sum(1 for s in ws.read_samples(stage.input_stage) if s.sample_id not in done)
        started = time.monotonic()
        bar = tqdm(total=total, desc=stage.name, unit="sample", disable=not progress or total == 0,
                   dynamic_ncols=True)
        batches = _pending_batches(ws, stage, done, batch_size)
        with ws.appender(stage.name) as out, bar:
            workers = max(1, min(jobs, total or 1))
            results_stream = (_ray_results(stage, batches, workers, ws, ray_address, num_gpus) if executor == "ray"
                              else _results_in_order(stage, batches, workers))
            timing: dict[str, Counter] = {}
            kept_this_run = 0
            for results, timed in results_stream:
                fresh = [r for r in results if _id(r) not in done]
                for result in fresh:
                    out.write(result)
                out.flush()
                bar.update(len(fresh))
                add_timing(timing, timed)
                kept_this_run += sum(not isinstance(r, Rejected) for r in fresh)
        elapsed_s = time.monotonic() - started
        stats = summarize(ws, stage.name)
        stats.update(processed_this_run=total, seconds_this_run=round(elapsed_s, 2), jobs=jobs,
                     samples_per_s=round(total / elapsed_s, 3) if total and elapsed_s else None,
                     # this run's model inference (summed over workers) apart from the rest: see
                     # construction.core.timing; workers ran side by side, so their seconds add up to
                     # at most workers x seconds_this_run
                     workers=workers, kept_this_run=kept_this_run,
                     timed_s={k: round(v, 2) for k, v in sorted(timing.get("seconds", {}).items())},
                     timed_calls=dict(sorted(timing.get("calls", {}).items())))
        extra = getattr(stage, "extra_stats", None)
        if extra:
            stats.update(extra(ws))
        ws.write_stats(stage.name, stats)
    return stats


def run_configured(ws: Workspace, stage: Stage, config: Any, *, batch_size: int | None = None,
                   restart: bool = False, retry_rejected: bool = False, progress: bool = True) -> dict[str, Any]:
    """run_stage with the executor, jobs, batch size and GPUs of the config's `runner` section."""
    if retry_rejected and config.synthesize.variants:
        # a variant rendered again on its own could be longer than its line's others, widen the line's
        # timeline and so hear another scene than they did: the voice is the only thing variants may differ in
        raise WorkbenchError("--retry-rejected is refused for a build with voice variants (synthesize.variants): "
                             "variants are never retried, since a variant rendered again could no longer share its "
                             "line's scene; a line ships with the variants that passed (docs/construction.md, "
                             "'Voice variants of a line')")
    runner = config.runner
    return run_stage(ws, stage, jobs=runner.jobs, batch_size=batch_size or runner.batch_size, restart=restart,
                     retry_rejected=retry_rejected, progress=progress, executor=runner.executor,
                     ray_address=runner.ray_address, num_gpus=runner.ray_num_gpus.get(stage.name, 0.0))


def summarize(ws: Workspace, stage_name: str) -> dict[str, Any]:
    """Counts over the whole manifest (all runs), per category and per drop reason."""
    per_category: dict[str, Counter] = defaultdict(Counter)
    reasons: Counter = Counter()
    for sample in ws.read_samples(stage_name):
        per_category[sample.category]["kept"] += 1
    for rejected in ws.read_rejected(stage_name):
        per_category[rejected.sample.category]["rejected"] += 1
        reasons[reason_code(rejected.reason)] += 1
    kept = sum(c["kept"] for c in per_category.values())
    dropped = sum(c["rejected"] for c in per_category.values())
    return {
        "stage": stage_name,
        "kept": kept,
        "rejected": dropped,
        "rejected_by_reason": dict(sorted(reasons.items())),
        "per_category": {cat: {"kept": c["kept"], "rejected": c["rejected"]}
                         for cat, c in sorted(per_category.items())},
    }


def print_summary(stats: dict[str, Any]) -> None:
    print(f"{stats['stage']}: kept {stats['kept']}, rejected {stats['rejected']}")
    for cat, counts in stats["per_category"].items():
        print(f"  {cat:<24} kept {counts['kept']:>6}  rejected {counts['rejected']:>6}")
    for code, n in stats["rejected_by_reason"].items():
        print(f"  rejected ({code}): {n}")
