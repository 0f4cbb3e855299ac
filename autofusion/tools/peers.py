"""Engines side by side, each in its own process: ``autofusion-bench MODEL --against ...``.

Each engine (``autofusion``'s built library, ``onnxruntime``, ``openvino``) runs in a worker
process of its own, so no engine's thread pool, allocator or caches disturb another's. The
parent sends every worker the same seeded inputs (an ``.npz`` file), collects each engine's
outputs once for the numerics, then times in *rounds*: in each round every worker, in an order
that rotates from round to round, runs ``warmup`` untimed and ``runs`` timed inferences while
the others wait, and reports its times. Per round the parent takes each engine's median and the
ratio autofusion / peer; the result gives, per peer, the median ratio over rounds and its range,
so a noisy machine shows up as a wide range instead of a wrong number. Each run is timed twice:
wall time, and the worker's process CPU time (every thread of the engine's process). With one
thread the CPU-time ratio is the one to read on a shared machine: a run that is preempted
waits in wall time but not in CPU time (SqueezeNet-1.1 against OpenVINO, load average 4-5,
5 rounds: wall ratios 0.37-2.27, CPU ratios of the same runs 0.94-1.08). With more threads
CPU time sums the threads, and engines whose pools spin between runs bill the spinning, so
only wall time is compared.

Engine settings: onnxruntime as in ``autofusion-bench`` (all graph optimisations,
``intra_op_num_threads = threads``, sequential); OpenVINO's CPU plugin with
``INFERENCE_NUM_THREADS = threads``, ``PERFORMANCE_HINT = LATENCY``, ``NUM_STREAMS = 1`` and
``INFERENCE_PRECISION_HINT = f32`` (on CPUs with bf16 it would otherwise compute in bf16,
which is not the comparison we want). OpenVINO is the optional extra ``.[bench]``.

Worker protocol (stdin/stdout, one JSON object per line): on start the worker loads its
engine, runs the inputs once, writes its outputs to ``OUT.npz`` and prints ``{"ready": true}``
(or ``{"error": "..."}`` and exits 1); then ``{"warmup": W, "runs": R}`` answers
``{"seconds": [...], "cpu_seconds": [...]}`` (wall and process CPU time per run); end of input
ends it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from autofusion.errors import AutofusionError

ENGINES = ("autofusion", "onnxruntime", "openvino")
PEERS = ENGINES[1:]


def parse_engines(text: str) -> list[str]:
    """``onnxruntime,openvino`` -> the peer names, checked (autofusion itself is implied)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise AutofusionError("--against: expected a comma-separated list of engines")
    for n in names:
        if n not in PEERS:
            raise AutofusionError(f"--against: unknown engine {n!r} (known: {', '.join(PEERS)})")
    if len(set(names)) != len(names):
        raise AutofusionError(f"--against: engine listed twice in {text!r}")
    if "openvino" in names:
        try:
            import openvino  # noqa: F401
        except ImportError:
            raise AutofusionError(
                "--against openvino: the openvino package is not installed "
                '(pip install -e ".[bench]")'
            ) from None
    return names


# ---------------------------------------------------------------------------------- workers


def ort_session(model_bytes: bytes, threads: int, optimized_path: str | None = None) -> Any:
    """An onnxruntime CPU session with all optimisations and the given intra-op threads."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    # Its pool still spins during a run, but stops when run() returns instead of spinning on
    # into the run that follows (ours, in the interleaved timing). Measured on resnet50 with
    # 2 threads, quiet machine: onnxruntime alone 23.6 ms with or without this; ours
    # interleaved after it 56.0 ms without, 35.2 ms with (alone 34.8 ms).
    so.add_session_config_entry("session.force_spinning_stop", "1")
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def _ort_runner(model: Path, threads: int) -> Callable[[Mapping[str, np.ndarray]], dict]:
    sess = ort_session(model.read_bytes(), threads)
    names = [o.name for o in sess.get_outputs()]
    return lambda feeds: dict(zip(names, sess.run(names, dict(feeds))))


def _openvino_runner(model: Path, threads: int) -> Callable[[Mapping[str, np.ndarray]], dict]:
    import openvino as ov

    config = {
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
        "INFERENCE_PRECISION_HINT": "f32",
    }
    compiled = ov.Core().compile_model(str(model), "CPU", config)
    request = compiled.create_infer_request()
    outputs = list(compiled.outputs)

    def run(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = request.infer(dict(feeds))
        return {o.any_name: np.array(result[o]) for o in outputs}

    return run


def _autofusion_runner(directory: Path, threads: int) -> Callable[[Mapping[str, np.ndarray]], dict]:
    from autofusion.lowering.backend import RunnableBackend
    from autofusion.pipeline import PipelineOptions, backend_of

    backend = backend_of(PipelineOptions(target="c"))
    assert isinstance(backend, RunnableBackend)
    lib = backend.load(directory, threads)
    return lambda feeds: lib.run(feeds)


def worker(engine: str, model: Path, library: Path | None, feeds_path: Path, out_path: Path,
           threads: int, stdin: IO[str], stdout: IO[str]) -> int:  # fmt: skip
    """One engine's side of the protocol (module docstring)."""

    def send(obj: object) -> None:
        stdout.write(json.dumps(obj) + "\n")
        stdout.flush()

    try:
        with np.load(feeds_path) as data:
            feeds = {k: data[k] for k in data.files}
        if engine == "autofusion":
            assert library is not None
            run = _autofusion_runner(library, threads)
        elif engine == "onnxruntime":
            run = _ort_runner(model, threads)
        else:
            run = _openvino_runner(model, threads)
        np.savez(out_path, **run(feeds))
    except Exception as e:  # an engine's own failure, reported to the parent as one line
        send({"error": f"{type(e).__name__}: {e}"})
        return 1
    send({"ready": True})
    for line in stdin:
        cmd = json.loads(line)
        for _ in range(int(cmd["warmup"])):
            run(feeds)
        seconds, cpu_seconds = [], []
        for _ in range(int(cmd["runs"])):
            t0, c0 = time.perf_counter(), time.process_time()
            run(feeds)
            cpu_seconds.append(time.process_time() - c0)
            seconds.append(time.perf_counter() - t0)
        send({"seconds": seconds, "cpu_seconds": cpu_seconds})
    return 0


# ---------------------------------------------------------------------------------- parent


class _Worker:
    def __init__(self, engine: str, args: list[str]) -> None:
        self.engine = engine
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autofusion.tools.peers", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            tail = err.strip().splitlines()[-1:] or ["no output"]
            raise AutofusionError(f"{self.engine} worker exited: {tail[0]}")
        msg = json.loads(line)
        if "error" in msg:
            raise AutofusionError(f"{self.engine}: {msg['error']}")
        return msg

    def time(self, warmup: int, runs: int) -> tuple[list[float], list[float]]:
        """Wall and process CPU seconds of each of ``runs`` runs."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"warmup": warmup, "runs": runs}) + "\n")
        self.proc.stdin.flush()
        msg = self.receive()
        return [float(s) for s in msg["seconds"]], [float(s) for s in msg["cpu_seconds"]]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def compare_engines(
    model: Path,
    library: Path,
    feeds: Mapping[str, np.ndarray],
    peers: Sequence[str],
    threads: int,
    runs: int,
    warmup: int,
    rounds: int,
    work: Path,
    say: Callable[[str], None] = lambda _s: None,
) -> dict[str, Any]:
    """Time autofusion's library (``library``, a built output folder) and each of ``peers`` on
    ``model`` (an .onnx file), each in its own process. Returns ``outputs`` (engine -> output
    arrays), ``latency_ms`` (engine -> median over rounds of the per-round medians),
    ``rounds_ms`` (engine -> per-round medians) and ``ratios`` (peer -> {median, min, max} of
    the per-round autofusion/peer ratios); with one thread also ``cpu_ms`` and ``cpu_ratios``,
    the same figures from process CPU time (module docstring)."""
    feeds_path = work / "feeds.npz"
    np.savez(feeds_path, **dict(feeds))  # pyright: ignore[reportArgumentType]
    engines = ["autofusion", *peers]
    workers: list[_Worker] = []
    try:
        for engine in engines:
            say(f"starting the {engine} worker ({threads} thread(s))")
            args = ["--worker", engine, "--model", str(model), "--feeds", str(feeds_path),
                    "--out", str(work / f"{engine}.npz"), "--threads", str(threads)]  # fmt: skip
            if engine == "autofusion":
                args += ["--library", str(library)]
            workers.append(_Worker(engine, args))
            workers[-1].receive()  # loaded and ran once; load one at a time, not in parallel
        outputs: dict[str, dict[str, np.ndarray]] = {}
        for engine in engines:
            with np.load(work / f"{engine}.npz") as data:
                outputs[engine] = {k: data[k] for k in data.files}
        per_round: dict[str, list[float]] = {e: [] for e in engines}
        cpu_round: dict[str, list[float]] = {e: [] for e in engines}
        for r in range(rounds):
            say(f"round {r + 1}/{rounds}: {runs} runs per engine ({warmup} warm-up)")
            order = workers[r % len(workers) :] + workers[: r % len(workers)]
            for w in order:
                wall, cpu = w.time(warmup, runs)
                per_round[w.engine].append(statistics.median(wall) * 1e3)
                cpu_round[w.engine].append(statistics.median(cpu) * 1e3)
    finally:
        for w in workers:
            w.close()
    result: dict[str, Any] = {
        "outputs": outputs,
        "latency_ms": {e: round(statistics.median(v), 4) for e, v in per_round.items()},
        "rounds_ms": {e: [round(x, 4) for x in v] for e, v in per_round.items()},
        "ratios": _ratios(per_round, peers),
    }
    if threads == 1:
        result["cpu_ms"] = {e: round(statistics.median(v), 4) for e, v in cpu_round.items()}
        result["cpu_rounds_ms"] = {e: [round(x, 4) for x in v] for e, v in cpu_round.items()}
        result["cpu_ratios"] = _ratios(cpu_round, peers)
    return result


def _ratios(per_round: Mapping[str, list[float]], peers: Sequence[str]) -> dict[str, Any]:
    """Per peer: median, min and max over rounds of autofusion's median / the peer's."""
    ratios = {}
    for peer in peers:
        rs = [a / p for a, p in zip(per_round["autofusion"], per_round[peer]) if p > 0]
        if not rs:  # a peer too fast for the clock (CPU time ticks in ms on some systems)
            ratios[peer] = {"median": None, "min": None, "max": None}
            continue
        ratios[peer] = {"median": round(statistics.median(rs), 4), "min": round(min(rs), 4),
                        "max": round(max(rs), 4)}  # fmt: skip
    return ratios


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="autofusion.tools.peers", description="engine worker")
    parser.add_argument("--worker", choices=ENGINES, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--library", type=Path)
    parser.add_argument("--feeds", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, required=True)
    a = parser.parse_args(argv)
    return worker(a.worker, a.model, a.library, a.feeds, a.out, a.threads, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(_main())
