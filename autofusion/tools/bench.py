"""``autofusion-bench``: our compiled model against onnxruntime, side by side in one process.

    autofusion-bench MODEL [--target c|ascendc] [--threads N] [--runs N] [--warmup N]
                     [--no-fusion] [--config FILE] [--memory-limit MB] [--profile N] [--cpu CPU]
                     [--precision] [--report-html FILE.html] [--against ENGINES] [--rounds N]
                     [--json]

Compiles MODEL (progress on stderr), builds an onnxruntime session (ORT_ENABLE_ALL,
intra_op_num_threads = N, inter_op_num_threads = 1, sequential, pool spinning stopped
when a run returns so it does not eat into ours), feeds both the same seeded
inputs (``autofusion.zoo.sample_inputs``, seed 0), checks numerics, then times them
interleaved (ours, ORT, ours, ORT, ...) after warm-up runs and reports median latencies and
their ratio ours/ORT.

Numerics: per output, ``max_abs_err = max|ours - ref|`` and ``max_rel_err = max_abs_err /
max(|ref|)`` (error relative to the output's scale); ``match`` is the project's bar
``allclose(rtol=1e-3, atol=1e-4 * max(1, max|ref|))`` on every output (exact for integer and
bool outputs; NaN and infinities must match exactly; see ``autofusion.testing``).
``--json`` prints one object: match, max_abs_err, max_rel_err, latency_ms {autofusion,
onnxruntime}, ratio, threads, runs, kernels (ours / ORT's optimised node count), arena_bytes,
report, outputs (per-output errors).

With ``--against ENGINES`` each engine (ours included) runs in a worker process of its own,
in interleaved rounds (``autofusion.tools.peers``); the ratios are per round, over wall time
and, with one thread, over process CPU time too (the steadier figure on a shared machine).
With ``--against`` (or ``--profile``) it also profiles the kernels over ``--runs`` more runs
and adds ``achieved``: the model's FLOPs per run (the cost model's per-kernel figures times
the calls), achieved GFLOP/s (those FLOPs over autofusion's median latency) and its fraction
of the machine's measured sgemm roof (``autofusion/runtime/roofs.py``), and
``conv_gemm_share``, the share of the profiled kernel time spent in kernels that compute a
Conv, ConvTranspose, MatMul or Gemm node (with what is fused into them).

``--report-html FILE`` writes the compile report as one self-contained HTML page (the fused
graph, groups, refusals, memory plan; docs/report.md) with the latencies and, with
``--profile``, the per-kernel table and a roofline chart against this machine's roofs.

``--precision`` (target c) also builds the unfused fp32 model (no config, no fusion) and
adds ``precision``: per output, max abs/rel error against onnxruntime and against that
build, and the weights.bin bytes of both builds (fp16/bf16 weights halve theirs).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from autofusion import testing
from autofusion.errors import AutofusionError, run_cli
from autofusion.frontend.shapes import parse_shape_specs
from autofusion.frontend.symbols import parse_range_specs
from autofusion.tools.compile import CliParser, add_model_options, positive_int
from autofusion.tools.peers import ort_session

if TYPE_CHECKING:
    from autofusion.lowering.backend import SimulatedBackend
    from autofusion.runtime.roofs import Roofs

RTOL, ATOL_SCALE = testing.RTOL, testing.ATOL_SCALE


def compare(ours: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Per-output errors and the overall match against the correctness bar
    (:func:`autofusion.testing.compare`: the one bar, with its NaN/inf rules)."""
    per: dict[str, dict[str, Any]] = {}
    ok = True
    worst_abs = 0.0
    worst_rel = 0.0
    for name, r in ref.items():
        if name not in ours:
            per[name] = {"match": False, "error": "missing output"}
            ok = False
            continue
        c = testing.compare(ours[name], r)
        if not c.match and c.reason.startswith(("shape", "dtype")):
            per[name] = {"match": False, "error": c.reason}
            ok = False
            continue
        per[name] = {"match": c.match, "max_abs_err": c.max_abs_err,
                     "max_rel_err": c.max_rel_err}  # fmt: skip
        ok = ok and c.match
        worst_abs = max(worst_abs, c.max_abs_err)
        worst_rel = max(worst_rel, c.max_rel_err)
    return {"match": ok, "max_abs_err": worst_abs, "max_rel_err": worst_rel, "outputs": per}


def _count_nodes(path: str) -> int | None:
    import onnx

    try:
        return len(onnx.load(path, load_external_data=False).graph.node)
    except Exception:  # the count is informational
        return None


def time_interleaved(
    fns: Sequence[Callable[[], object]], runs: int, warmup: int
) -> tuple[list[list[float]], list[list[float]]]:
    """(wall seconds, process CPU seconds) per call of each fn, called alternately ``runs``
    times after ``warmup`` calls each."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn()
            wall[i].append(time.perf_counter() - t0)
            cpu[i].append(time.process_time() - c0)
    return wall, cpu


def bench(
    model: str,
    target: str = "c",
    threads: int | None = None,
    runs: int = 20,
    warmup: int = 3,
    fusion: bool = True,
    config: str | None = None,
    memory_limit_mb: float | None = None,
    analysis_window: int | None = None,
    policy: str | None = None,
    progress: bool = True,
    profile: int = 0,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    dynamic: Mapping[str, tuple[int, int]] | None = None,
    cpu: str = "native",
    precision: bool = False,
    against: Sequence[str] = (),
    rounds: int = 5,
    report_html: str | None = None,
) -> dict[str, Any]:
    """Compile ``model``, compare with onnxruntime and time both; returns the result dict.
    ``profile`` > 0 (target c) also times each kernel over ``runs`` more runs and adds
    ``profile``: the ``profile`` slowest kernel calls, slowest first. ``against`` (peer
    engines, :mod:`autofusion.tools.peers`) times every engine in its own process over
    ``rounds`` interleaved rounds instead, and adds ``peers``."""
    import autofusion
    from autofusion.api import load_model, stderr_progress
    from autofusion.lowering import targets_of
    from autofusion.lowering.backend import RunnableBackend, SimulatedBackend
    from autofusion.pipeline import PipelineOptions, backend_of
    from autofusion.zoo import sample_inputs

    say = stderr_progress("autofusion-bench") if progress else (lambda _s: None)
    backend = backend_of(PipelineOptions(target=target, cpu=cpu))  # unknown target, --cpu
    if profile < 0:
        raise AutofusionError(f"--profile: expected a number of kernels >= 0, got {profile}")
    if profile and not isinstance(backend, RunnableBackend):
        raise AutofusionError(f"--profile needs --target {' or '.join(targets_of(RunnableBackend))}"
                              " (it times the generated kernels)")  # fmt: skip
    if precision and not isinstance(backend, RunnableBackend):
        runnable = " or ".join(targets_of(RunnableBackend))
        raise AutofusionError(f"--precision needs --target {runnable} (it runs the unfused "
                              "fp32 build beside this one)")  # fmt: skip
    if against and not isinstance(backend, RunnableBackend):
        runnable = " or ".join(targets_of(RunnableBackend))
        raise AutofusionError(f"--against needs --target {runnable} (it runs the built library)")
    if rounds < 1:
        raise AutofusionError(f"--rounds: expected a number >= 1, got {rounds}")
    if report_html is not None:
        from autofusion.tools.compile import check_side_file

        check_side_file("--report-html", report_html)  # before any work
    if not isinstance(backend, RunnableBackend | SimulatedBackend):
        raise AutofusionError(f"autofusion-bench: target {target!r} can neither run nor be "
                              "simulated in this process")  # fmt: skip
    nthreads = threads if threads is not None else (os.cpu_count() or 1)
    proto = load_model(model)
    from autofusion.api import open_model

    # every symbol pinned and in its range; one pin fixes its symbols in the other inputs too
    source = open_model(proto, model, input_shapes, dynamic, config, ("--input-shape", "--dynamic"))
    assert source.plan is not None
    source.plan.require_static()
    input_shapes = source.plan.shapes_for(source.plan.pinned) if input_shapes else None
    feeds = sample_inputs(proto, seed=0, input_shapes=input_shapes)
    close: Callable[[], None] = lambda: None  # noqa: E731
    if isinstance(backend, RunnableBackend):
        compiled = autofusion.compile(
            proto, target=target, config=config, fusion=fusion, threads=nthreads,
            memory_limit_mb=memory_limit_mb, policy=policy, progress=say, label=model,
            input_shapes=input_shapes, dynamic=dynamic, cpu=cpu, analysis_window=analysis_window,
        )  # fmt: skip
        run_ours: Callable[[], Mapping[str, np.ndarray]] = lambda: compiled.run(feeds)  # noqa: E731
        report = compiled.report
        close = compiled.close
    else:
        run_ours, report = _simulated_runner(backend, source, feeds, fusion, config,
                                             memory_limit_mb, policy, model, say,
                                             analysis_window)  # fmt: skip
    say("building the onnxruntime session")
    with tempfile.TemporaryDirectory(prefix="afbench-") as tmp:
        opt_path = os.path.join(tmp, "ort_optimized.onnx")
        sess = ort_session(proto.SerializeToString(), nthreads, opt_path)
        ort_nodes = _count_nodes(opt_path)
    out_names = [o.name for o in sess.get_outputs()]
    ref = dict(zip(out_names, sess.run(out_names, feeds)))
    ours = run_ours()
    result = compare(ours, ref)
    if precision:
        say("building the unfused fp32 reference (--precision)")
        base = autofusion.compile(
            proto, target=target, fusion=False, threads=nthreads, progress=say, label=model,
            input_shapes=input_shapes, dynamic=dynamic, cpu=cpu,
        )  # fmt: skip
        result["precision"] = precision_report(ours, ref, base.run(feeds),
                                               weights_bytes(compiled.directory),
                                               weights_bytes(base.directory))  # fmt: skip
        base.close()
    if against:
        result["peers"] = _peer_timing(proto, compiled.directory, feeds, ref, against, nthreads,
                                       runs, warmup, rounds, say)  # fmt: skip
        ms_ours = result["peers"]["latency_ms"]["autofusion"]
        ms_ort = result["peers"]["latency_ms"].get("onnxruntime", 0.0)
        cpu_ours = cpu_ort = 0.0
    else:
        say(f"timing {runs} interleaved runs ({warmup} warm-up) on {nthreads} thread(s)")
        (t_ours, t_ort), (c_ours, c_ort) = time_interleaved(
            [run_ours, lambda: sess.run(out_names, feeds)], runs, warmup
        )
        ms_ours = statistics.median(t_ours) * 1e3
        ms_ort = statistics.median(t_ort) * 1e3
        cpu_ours = statistics.median(c_ours) * 1e3
        cpu_ort = statistics.median(c_ort) * 1e3
    result.update(
        {
            "model": model,
            "target": target,
            "threads": nthreads,
            "runs": runs,
            "fusion": fusion,
            "latency_ms": {"autofusion": round(ms_ours, 4), "onnxruntime": round(ms_ort, 4)},
            "ratio": round(ms_ours / ms_ort, 4) if ms_ort > 0 else None,
            "cpu_ms": (
                None
                if against
                else {"autofusion": round(cpu_ours, 4), "onnxruntime": round(cpu_ort, 4)}
            ),
            "cpu_ratio": round(cpu_ours / cpu_ort, 4) if cpu_ort > 0 else None,
            "kernels": {
                "before": report.get("kernels_before"),
                "autofusion": report.get("kernels_after"),
                "onnxruntime": ort_nodes,
            },
            "arena_bytes": report.get("arena_bytes"),
            "report": report,
        }
    )
    if profile > 0 or against:
        from autofusion.runtime.roofs import machine_roofs

        roofs = machine_roofs(nthreads, cpu, say)
        say(f"profiling kernels over {runs} runs")
        kernels = compiled.profile(feeds, runs)
        result["achieved"] = achieved_rates(kernels, runs, ms_ours, contraction_nodes(proto),
                                            roofs.peak_gflops)  # fmt: skip
        if profile > 0:
            rows = profile_rows(kernels, runs, ms_ours, roofs)
            result["profile"] = rows[:profile]
        result["roofs"] = roofs.to_dict()
    if isinstance(backend, SimulatedBackend):
        result["latency_note"] = backend.latency_note
    close()
    if report_html is not None:
        say(f"writing {report_html}")
        _write_report_html(report_html, result, proto, input_shapes, dynamic, config, say,
                           PipelineOptions(target=target, fusion=fusion, config=config,
                                           policy=policy, memory_limit_mb=memory_limit_mb,
                                           cpu=cpu))  # fmt: skip
    return result


def _write_report_html(path: str, result: Mapping[str, Any], proto: Any,
                       input_shapes: Mapping[str, Sequence[int]] | None,
                       dynamic: Mapping[str, tuple[int, int]] | None, config: str | None,
                       say: Callable[[str], None], opts: Any) -> None:  # fmt: skip
    """``--report-html``: the page of the compile report, with the latencies and profile.
    The graph and memory plan come from the tensor passes, run again here (a cached build
    keeps no IR)."""
    from autofusion.api import open_model, prepare_module
    from autofusion.policy.html_report import collect, render_html, write_html

    source = open_model(proto, result["model"], input_shapes, dynamic, config,
                        ("--input-shape", "--dynamic"))  # fmt: skip
    if opts.memory_limit_mb is None:  # as compile() resolves it
        import dataclasses

        from autofusion.api import get_memory_limit
        from autofusion.pipeline import config_memory_limit

        limit = config_memory_limit(config)
        opts = dataclasses.replace(opts, memory_limit_mb=limit if limit is not None
                                   else get_memory_limit())  # fmt: skip
    module, _ = prepare_module(source, opts, result["model"], say)
    lat = result["latency_ms"]
    extra = [("latency autofusion", f"{lat['autofusion']:.3f} ms"),
             ("latency onnxruntime", f"{lat['onnxruntime']:.3f} ms"),
             ("ratio ours/ORT", f"{result['ratio']:.3f}" if result["ratio"] else "n/a"),
             ("outputs match", "yes" if result["match"] else "NO")]  # fmt: skip
    text = render_html(result["report"], collect(module), result["model"],
                       result.get("profile"), result.get("roofs"), extra)  # fmt: skip
    write_html("--report-html", path, text)


def _peer_timing(proto: Any, directory: Any, feeds: Mapping[str, np.ndarray],
                 ref: Mapping[str, np.ndarray], against: Sequence[str], threads: int,
                 runs: int, warmup: int, rounds: int,
                 say: Callable[[str], None]) -> dict[str, Any]:  # fmt: skip
    """``--against``: every engine in its own process (autofusion.tools.peers); numerics of
    each engine against onnxruntime in this process."""
    from pathlib import Path

    from autofusion.tools import peers

    with tempfile.TemporaryDirectory(prefix="afpeers-") as tmp:
        model_path = Path(tmp) / "model.onnx"
        model_path.write_bytes(proto.SerializeToString())
        timing = peers.compare_engines(model_path, Path(directory), feeds, list(against),
                                       threads, runs, warmup, rounds, Path(tmp), say)  # fmt: skip
    numerics = {e: compare(out, ref) for e, out in timing.pop("outputs").items()}
    timing["match"] = {e: n["match"] for e, n in numerics.items()}
    timing["max_abs_err"] = {e: n["max_abs_err"] for e, n in numerics.items()}
    timing["rounds"] = rounds
    return timing


def weights_bytes(directory: Any) -> int | None:
    """The size of a build's weights.bin (None if it has none)."""
    path = os.path.join(str(directory), "weights.bin")
    return os.path.getsize(path) if os.path.isfile(path) else None


def precision_report(ours: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray],
                     base: Mapping[str, np.ndarray], ours_weights: int | None,
                     base_weights: int | None) -> dict[str, Any]:  # fmt: skip
    """Per output: error against onnxruntime (``ref``) and against the unfused fp32 build
    (``base``); with the two builds' weights.bin sizes."""
    per: dict[str, dict[str, Any]] = {}
    for name, r in ref.items():
        row: dict[str, Any] = {}
        for key, other in (("vs_onnxruntime", r), ("vs_unfused_fp32", base.get(name))):
            if name not in ours or other is None:
                row[key] = {"error": "missing output"}
                continue
            c = testing.compare(ours[name], other)
            row[key] = {"max_abs_err": c.max_abs_err, "max_rel_err": c.max_rel_err}
        per[name] = row
    return {"outputs": per, "weights_bytes": ours_weights,
            "unfused_fp32_weights_bytes": base_weights}  # fmt: skip


def _simulated_runner(backend: SimulatedBackend, proto: Any, feeds: Mapping[str, np.ndarray],
                      fusion: bool, config: str | None, memory_limit_mb: float | None,
                      policy: str | None, label: str, say: Callable[[str], None],
                      analysis_window: int | None = None):  # fmt: skip
    """(run function, report) for a backend whose kernels run on a functional model here."""
    from autofusion.api import prepare_module
    from autofusion.pipeline import Pipeline, PipelineOptions

    opts = PipelineOptions(target=backend.name, fusion=fusion, config=config, policy=policy,
                           memory_limit_mb=memory_limit_mb,
                           analysis_window=analysis_window)  # fmt: skip
    t0 = time.perf_counter()
    pipeline = Pipeline.from_options(opts)
    module, report = prepare_module(proto, opts, label, say, pipeline)
    pipeline.lowering().run(module, progress=say)
    say(f"building the {backend.name} kernels against its functional model")
    run = backend.simulate(module)
    report["compile_seconds"] = round(time.perf_counter() - t0, 3)
    return (lambda: run(feeds)), report


#: ONNX ops whose kernels count as conv/GEMM time (with whatever was fused into them)
CONTRACTION_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})


def contraction_nodes(proto: Any) -> frozenset[str]:
    """Names (as kernels' ``origins`` give them) of the model's CONTRACTION_OPS nodes."""
    from autofusion.frontend.loader import node_label

    return frozenset(node_label(n, i) for i, n in enumerate(proto.graph.node)
                     if n.op_type in CONTRACTION_OPS)  # fmt: skip


def achieved_rates(kernels: Sequence[Any], runs: int, run_ms: float, contractions: frozenset[str],
                   peak_gflops: float) -> dict[str, Any]:  # fmt: skip
    """The whole model's achieved rate and where its time goes, from one profile of ``runs``
    runs: ``model_flops`` (per run: every kernel's FLOPs from the cost model times its calls),
    ``gflops_per_s`` (those FLOPs over ``run_ms``, the median latency), its fraction of the
    machine's sgemm roof, and ``conv_gemm_share``: the profiled time of the kernels computing
    a Conv/ConvTranspose/MatMul/Gemm node (epilogues fused into them included) over the
    profiled time of all kernels (``conv_gemm_ms`` / ``kernel_ms``, per run)."""
    flops = sum(k.flops * k.calls for k in kernels if k.flops is not None) / runs
    total = sum(k.seconds for k in kernels)
    conv = sum(k.seconds for k in kernels if contractions.intersection(k.origins))
    gflops = flops / (run_ms * 1e-3) / 1e9 if run_ms > 0 else None
    return {
        "model_flops": round(flops),
        "gflops_per_s": _r(gflops, 3),
        "roof_gflops": round(peak_gflops, 3),
        "roof_fraction": _r(gflops / peak_gflops if gflops and peak_gflops > 0 else None, 4),
        "conv_gemm_share": round(conv / total, 4) if total > 0 else None,
        "conv_gemm_ms": round(1e3 * conv / runs, 4),
        "kernel_ms": round(1e3 * total / runs, 4),
    }


def profile_rows(kernels: Sequence[Any], runs: int, run_ms: float,
                 roofs: Roofs | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Per-kernel rows for the report: ms per run and share of the (untimed) median run;
    FLOPs and bytes of one call (``cost.kernel_work``, recorded at compile time), achieved
    GFLOP/s and GB/s, FLOPs per byte, and against ``roofs`` the roof that bounds the kernel
    (``compute`` or ``memory``) and the achieved share of its attainable rate."""
    rows = []
    for k in kernels:
        row: dict[str, Any] = {
            "kernel": k.kernel,
            "pattern": k.pattern,
            "origins": list(k.origins),
            "ms": round(1e3 * k.seconds / runs, 4),
            "share": round(1e3 * k.seconds / runs / run_ms, 4) if run_ms > 0 else None,
            "calls": k.calls,
            "flops": k.flops,
            "bytes": k.bytes_moved,
            "gflops_per_s": _r(k.gflops_per_s, 3),
            "gb_per_s": _r(k.gb_per_s, 3),
            "flops_per_byte": _r(k.flops_per_byte, 3),
            "bound": None,
            "roof_fraction": None,
        }
        ai, achieved = k.flops_per_byte, k.gflops_per_s
        if roofs is not None and ai is not None and achieved is not None:
            row["bound"] = roofs.bound(ai)
            attainable = roofs.attainable_gflops(ai)
            row["roof_fraction"] = round(achieved / attainable, 4) if attainable > 0 else None
        rows.append(row)
    return rows


def _r(v: float | None, digits: int) -> float | None:
    return None if v is None else round(v, digits)


def roofs_line(roofs: Mapping[str, Any]) -> str:
    return (f"roofs: sgemm {roofs['peak_gflops']:.1f} GFLOP/s ({roofs['threads']} thread(s)), "
            f"copy {roofs['dram_gbs']:.1f} GB/s, ridge {roofs['ridge_flops_per_byte']:.1f} "
            f"FLOP/B ({roofs['source']})")  # fmt: skip


def _profile_table(rows: Sequence[Mapping[str, Any]]) -> str:
    def num(v: object, fmt: str) -> str:
        return format(v, fmt) if isinstance(v, int | float) else "-"

    lines = [f"{'kernel':<28} {'ms/run':>8} {'share':>6} {'GFLOP/s':>8} {'GB/s':>7} "
             f"{'FLOP/B':>7} {'bound':>7} {'%roof':>6}  ONNX nodes"]  # fmt: skip
    for p in rows:
        share = f"{100 * p['share']:5.1f}%" if p["share"] is not None else "   n/a"
        frac = p.get("roof_fraction")
        roof = f"{100 * frac:5.1f}%" if isinstance(frac, int | float) else "     -"
        nodes = ", ".join(p["origins"]) or "-"
        if len(nodes) > 40:
            nodes = nodes[:37] + "..."
        lines.append(
            f"{p['kernel']:<28} {p['ms']:>8.3f} {share} {num(p.get('gflops_per_s'), '8.2f'):>8} "
            f"{num(p.get('gb_per_s'), '7.2f'):>7} {num(p.get('flops_per_byte'), '7.1f'):>7} "
            f"{p.get('bound') or '-':>7} {roof}  {nodes}"
        )
    return "\n".join(lines)


def _latency_rows(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        ("latency autofusion", f"{r['latency_ms']['autofusion']:.3f} ms  (median of {r['runs']})"),
        ("latency onnxruntime", f"{r['latency_ms']['onnxruntime']:.3f} ms"),
        *([("note", r["latency_note"])] if "latency_note" in r else []),
        ("ratio ours/ORT", f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"),
        ("CPU time ratio", (f"{r['cpu_ratio']:.3f}  ({r['cpu_ms']['autofusion']:.3f} / "
                            f"{r['cpu_ms']['onnxruntime']:.3f} ms, all threads)")
                           if r["cpu_ratio"] is not None else "n/a"),
    ]  # fmt: skip


def _peer_rows(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``--against``: each engine's latency (own process) and the per-round ratios."""
    p = r["peers"]
    rows = []
    for engine, ms in p["latency_ms"].items():
        ok = (
            "" if p["match"][engine] else f"  outputs MISMATCH (abs {p['max_abs_err'][engine]:.3g})"
        )
        rows.append((f"latency {engine}", f"{ms:.3f} ms  (median of {p['rounds']} rounds x "
                                          f"{r['runs']} runs, own process){ok}"))  # fmt: skip
    for peer, q in p["ratios"].items():
        rows.append((f"ratio autofusion/{peer}",
                     f"{q['median']:.3f}  (rounds: {q['min']:.3f} to {q['max']:.3f})"))  # fmt: skip
    for peer, q in p.get("cpu_ratios", {}).items():  # one thread only (peers.py)
        if q["median"] is not None:
            rows.append((f"CPU ratio autofusion/{peer}",
                         f"{q['median']:.3f}  (rounds: {q['min']:.3f} to {q['max']:.3f}; "
                         f"process CPU time, {p['cpu_ms']['autofusion']:.3f} / "
                         f"{p['cpu_ms'][peer]:.3f} ms)"))  # fmt: skip
    return rows


def format_table(r: Mapping[str, Any]) -> str:
    """The human-readable summary."""

    def mb(v: object) -> str:
        return f"{v / 2**20:.2f} MB" if isinstance(v, (int, float)) else "n/a"

    rep = r["report"]
    k = r["kernels"]
    rows = [
        ("model", f"{r['model']} (target {r['target']}, {r['threads']} thread(s), "
                  f"fusion {'on' if r['fusion'] else 'off'})"),
        ("match",
         f"{'yes' if r['match'] else 'NO'}  (rtol {RTOL}, atol {ATOL_SCALE}*max(1,|ref|))"),
        ("max abs err", f"{r['max_abs_err']:.3g}"),
        ("max rel err", f"{r['max_rel_err']:.3g}  (relative to max|ref|)"),
        *(_peer_rows(r) if "peers" in r else _latency_rows(r)),
        ("kernels", f"{k['before']} ops -> {k['autofusion']} kernels "
                    f"(ORT optimised graph: {k['onnxruntime']} nodes)"),
        ("fused groups", f"{len(rep.get('groups', []))}, refusals {len(rep.get('refusals', []))}"),
        ("arena", f"{mb(rep.get('arena_bytes'))} (naive {mb(rep.get('naive_bytes'))}, "
                  f"lower bound {mb(rep.get('lower_bound_bytes'))})"),
        ("compile", f"{rep.get('compile_seconds')} s" + (" (cached)" if rep.get("cached") else "")),
    ]  # fmt: skip
    prec = r.get("precision")
    if prec:
        rows.append(("weights.bin", f"{prec['weights_bytes']} bytes (unfused fp32 build: "
                                    f"{prec['unfused_fp32_weights_bytes']})"))  # fmt: skip
        for name, o in prec["outputs"].items():
            for key, label in (("vs_onnxruntime", "vs ORT"), ("vs_unfused_fp32", "vs fp32")):
                e = o[key]
                text = e.get("error") or (f"abs {e['max_abs_err']:.3g}  "
                                          f"rel {e['max_rel_err']:.3g}")  # fmt: skip
                rows.append((f"precision {name!r} {label}", text))
    for name, o in r["outputs"].items():
        if "error" in o:
            rows.append((f"output {name!r}", o["error"]))
        elif not o["match"]:
            rows.append((f"output {name!r}", f"MISMATCH abs {o['max_abs_err']:.3g}"))
    ach = r.get("achieved")
    if ach:
        rate = ach["gflops_per_s"]
        rows.append(("achieved", (f"{rate:.1f} GFLOP/s ({ach['model_flops'] / 1e9:.3g} GFLOP "
                                  f"per run; {100 * (ach['roof_fraction'] or 0):.0f}% of the "
                                  f"sgemm roof {ach['roof_gflops']:.0f} GFLOP/s)")
                                 if rate is not None else "n/a"))  # fmt: skip
        share = ach["conv_gemm_share"]
        rows.append(("conv/GEMM time", (f"{100 * share:.1f}% of kernel time "
                                        f"({ach['conv_gemm_ms']:.3f} of {ach['kernel_ms']:.3f} "
                                        "ms per profiled run)")
                                       if share is not None else "n/a"))  # fmt: skip
    width = max(len(a) for a, _ in rows)
    text = "\n".join(f"{a:<{width}}  {b}" for a, b in rows)
    if r.get("profile"):
        text += (f"\n\nslowest kernels (ours, timed one by one; GB/s of compulsory traffic):\n"
                 f"{roofs_line(r['roofs'])}\n{_profile_table(r['profile'])}")  # fmt: skip
    return text


def _run(argv: Sequence[str] | None) -> None:
    parser = CliParser(prog="autofusion-bench", description=(__doc__ or "").split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("--runs", metavar="N", type=positive_int, default=20)
    parser.add_argument("--warmup", metavar="N", type=positive_int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--against",
        metavar="ENGINES",
        help="time autofusion and these engines (onnxruntime,openvino) each in its own "
        "process, in interleaved rounds (target c)",
    )
    parser.add_argument(
        "--rounds",
        metavar="N",
        type=positive_int,
        default=5,
        help="rounds for --against (default 5; each engine runs --runs per round)",
    )
    parser.add_argument(
        "--profile",
        metavar="N",
        type=int,
        default=0,
        help="also time each kernel and list the N slowest (target c)",
    )
    parser.add_argument(
        "--report-html",
        metavar="FILE.html",
        help="write the report as one HTML page, with the profile when --profile is given",
    )
    parser.add_argument(
        "--precision",
        action="store_true",
        help="per output, error against onnxruntime and against the unfused fp32 build",
    )
    args = parser.parse_args(argv)
    if args.config is not None and not os.path.isfile(args.config):
        raise AutofusionError(f"{args.config}: no such config file")
    from autofusion.tools.peers import parse_engines

    against = parse_engines(args.against) if args.against is not None else []
    result = bench(
        args.model, target=args.target, threads=args.threads, runs=args.runs,
        warmup=args.warmup, fusion=not args.no_fusion, config=args.config,
        memory_limit_mb=args.memory_limit, policy=args.policy, profile=args.profile,
        analysis_window=args.analysis_window,
        input_shapes=parse_shape_specs(args.input_shape),
        dynamic=parse_range_specs(args.dynamic), cpu=args.cpu, precision=args.precision,
        against=against, rounds=args.rounds, report_html=args.report_html,
    )  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(format_table(result))


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("autofusion-bench", lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())
