"""Fusion efficiency: what fusion saves against what it could physically remove (issue 16).

For each model it builds the unfused (``fusion=False``) and the fused C build at the same
thread count and measures, in ``--rounds`` rounds of ``--runs`` runs of each build, the
end-to-end time of each (per round, the median of its runs; with ``--interleave run``, the
default, a round alternates single runs of the two builds, each pair's order flipped; with
``block``, a round times all runs of one build then of the other), plus one per-kernel profile
of each build. From those:

- **R**, the removable time: the unfused kernels the fused build removes or absorbs. Every
  unfused kernel is matched by its ONNX origins to the fused kernel that computes them; of the
  unfused kernels one fused kernel covers, its contractions (Conv, MatMul, Gemm, Attention:
  the work that stays) are its anchors, or the slowest one where it has none, and the others
  were absorbed into them; an unfused kernel no fused kernel covers was removed outright. So
  an attention group keeps both its MatMuls and counts its scale, mask and Softmax as
  removable (taking the slowest member as the one anchor, as before, made Swin's Softmax
  over 49 x 49 windows the anchor and put the MatMuls in R). In a conv chain
  (``fuse-conv-chain``'s ``chain_*`` kernels) both convs stay anchors too: the chain removes
  their intermediate's memory round trip, which is inside the two conv kernels' measured
  times (no profile separates it), not a conv.
  R is their share of the unfused profile times the unfused
  end-to-end time (the profile's own timer overhead, larger for the build with more kernels,
  so cancels out of the share).
- **saving** = unfused - fused end-to-end time, and **ratio** = saving / R (issue 16's bar:
  at least 0.8). **paired saving** is the median of the paired differences unfused - fused: with
  ``--interleave run`` each pair of neighbouring runs of the two builds (``--runs`` x
  ``--rounds`` pairs), with ``block`` each round's difference of medians. On a shared
  machine whose speed drifts during a measurement it moves less than the difference of the
  two medians, and the finer the pairs the slower a drift it cancels: ResNet-50's
  one-thread saving is ~2% of its run, and blocks of ~0.7 s put the machine's drifts on
  one build (``time_rounds``).
- **bytes moved** per inference, fused and unfused, from the cost model's compulsory traffic of
  each kernel (``report["kernel_work"]``, the profiler's ``bytes_moved`` times calls).
- the same ratio from **kernel minima**: each build profiled in ``--runs`` x ``--rounds``
  single runs (interleaved), each kernel's fastest run kept; R, the saving and their ratio are
  then sums of those minima. On a shared machine the end-to-end medians move by a few percent
  between rounds, which is Inception's whole R (BN + ReLU, ~4% of its time); the minima hold
  still to about a percent, so this column says what fusion saves when the load does not.
  Not at two threads on a model of small kernels: there (``--clock threads``) a kernel's time
  is the on-CPU time of the calling thread alone, which is half a kernel split over both
  threads and all of one run on the caller, and the two builds split differently (the zoo's
  Inception, kernels of 10-300 us, read 0.51 and -1.52 where its end-to-end ratios were
  0.81-0.97); read the end-to-end columns for such a row.

A round of each build lasts at least ``--min-round-ms`` (500 ms; a fast model gets more than
``--runs`` runs a round, and its kernel minima as many more profiles): the zoo's Inception
runs in ~5 ms with R ~0.3 ms, so at 10 runs a round one 0.1 ms disturbance moved its ratio
by a third (session 24 read 0.54 to 1.11 on the same kernels).

Each model is ``NAME`` of the zoo, ``NAME@SEQ`` for a zoo BERT at sequence length SEQ,
``mobilenet@224`` (MobileNet-V2 at 224 x 224, where ``fuse-conv-chain`` forms chains), or the
path of an ``.onnx`` file (e.g. the real exports of ``benchmarks/export_full_models.py``).
Every build is checked against the other (the project's correctness bar). Not a test: nothing
here asserts a time.

``--clock auto`` (the default) takes, row by row, ``cpu`` for one thread and ``threads`` for
more (below), so one run of ``--threads 1,2`` measures both as the notes do; ``wall`` is the
plain wall clock (on a shared machine it measures the load as much as the builds).
``--clock cpu`` times each run by the process's CPU time instead of the wall clock: on a
shared machine a 1-thread run's wall time counts whatever else ran on its core (rounds of one
build were seen 2x apart), its CPU time does not. Only for 1 thread (more threads' CPU time
counts OpenMP's spinning), so the thread counts must then be ``1``. ``--clock threads`` times
each run by the on-CPU time of its busiest thread (``/proc/self/task/*/schedstat``, Linux),
with ``OMP_WAIT_POLICY=passive`` (the script re-executes itself with it) so that a thread
waiting for the others sleeps, and with the runtime's thread-count adaptation off in both
builds: a run's latency on an idle machine, fork and join waits aside, at any thread count.
The per-kernel profiles (R's share and the kernel minima) are then timed by the on-CPU time
of the thread that runs the model (``profile(..., clock="thread")``), which is the busiest
one: by the wall clock each kernel also counted the wake-up of the sleeping thread, which the
run's time leaves out, and the unfused build has ~3x the kernels (ResNet-50 at two threads:
R 8.09 ms that way against 3.64 ms by the wall clock on a quiet machine).
At two threads on the shared machine the wall clock measures the load, and the adaptation
can leave one build on one thread and the other on two (seen: the unfused ResNet-50 build
cut to one thread while the fused one kept two), so the two builds were not compared at the
same thread count.

``--processes K`` (default 3; 1 measures in this process) measures each row in K fresh
processes and reports the median of each figure and its range (and each process's ratios on
stderr): the two builds' memory lands at other physical
addresses in each process, and on this machine that moved the real ResNet-50's one-thread
saving by more than its R (session 26: ratios 0.17-0.94 over five processes of one build,
where each process's rounds agreed to a few hundredths), so one process is one draw.

``--detail`` adds, per row, where the fused kernels still pay for what they absorbed, by
kernel minima: per kind of fused kernel (pattern, and for convs the algorithm and output map),
the unfused time of its anchors, its share of R, and ``kept``, the fused kernels' minima minus
their anchors' (``kept_by_kind``; kept / R is the share of R fusion did not save there),
and the same kept time as the sum of per-kernel medians over the rounds of (fused kernel -
its anchors in the same round), ``kept_paired``: minima pair each kernel's luckiest runs of
the two builds, which need not be the same moment, and on this machine they moved more.

``--kernels N`` lists, per row, the N fused kernels that keep most and the N that keep least
by the same paired medians, kernel by kernel (``kept_by_kernel``; with ``--processes`` each
kernel's median over the processes), then the sums: which kernels of a kind keep its time.

    python benchmarks/fusion_efficiency.py --models resnet50,mobilenet,inception,bert_base@128,\
bert_base@512,swin_tiny --threads 1,2 --runs 10 --rounds 3 [--detail] [--kernels 8]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
from libpair import on_cpu_ns

from autofusion.errors import AutofusionError
from autofusion.runtime.toolchain import CPUS

DEFAULT_MODELS = "resnet50,mobilenet,inception,bert_base@128,bert_base@512,swin_tiny"


def build(spec: str) -> onnx.ModelProto:
    """The zoo model ``NAME``, a zoo BERT ``NAME@SEQ`` at sequence length ``SEQ``,
    ``mobilenet@SIZE`` (MobileNet-V2 at SIZE x SIZE) or an ``.onnx`` file."""
    from autofusion.zoo import get_model
    from autofusion.zoo.transformer import bert

    if spec.endswith(".onnx"):
        from autofusion.api import load_model

        return load_model(spec)  # a missing or unreadable file: one AutofusionError

    name, _, seq = spec.partition("@")
    if seq and not seq.isdigit():
        raise AutofusionError(f"{spec}: the size after @ must be a whole number, e.g. {name}@128")
    if name == "mobilenet" and seq:  # mobilenet@224: the published resolution
        from autofusion.zoo.cnn import mobilenet

        return mobilenet(int(seq))
    return bert(name, seq=int(seq)) if seq else get_model(name)


@dataclass
class Split:
    """The unfused profile split into what the fused build keeps and what it removes."""

    removed_share: float  # of the unfused profiled time
    absorbed: int  # unfused kernels folded into a fused kernel
    eliminated: int  # unfused kernels with no fused kernel computing their nodes
    kept: int


def _contraction(k: Any) -> bool:
    """Whether an unfused kernel (one op; named ``k<i>_<op>``) is a Conv/MatMul/Gemm/Attention."""
    op = str(k.kernel).split("_", 1)[-1]
    return op in ("conv", "matmul", "gemm", "attention")


def _match(unfused: Sequence[Any], fused: Sequence[Any]) -> tuple[dict[int, list[Any]], list[Any]]:
    """The unfused kernels each fused kernel (by index) covers, matched by ONNX origins, and
    the unfused kernels none covers."""
    owner: dict[str, int] = {}
    for i, k in enumerate(fused):
        for o in k.origins:
            owner.setdefault(o, i)
    groups: dict[int, list[Any]] = {}
    eliminated: list[Any] = []
    for k in unfused:
        hits = [owner[o] for o in k.origins if o in owner]
        if hits:
            groups.setdefault(min(hits), []).append(k)
        else:
            eliminated.append(k)
    return groups, eliminated


def _anchors(members: Sequence[Any]) -> list[Any]:
    """The members whose work stays in the fused kernel (see the module doc)."""
    return [k for k in members if _contraction(k)] or [max(members, key=lambda k: k.seconds)]


def split_profile(unfused: Sequence[Any], fused: Sequence[Any]) -> Split:
    """Match unfused to fused kernels by ONNX origins (see the module doc)."""
    groups, eliminated = _match(unfused, fused)
    removed = sum(k.seconds for k in eliminated)
    absorbed = 0
    for members in groups.values():
        anchors = _anchors(members)
        for k in members:
            if all(k is not a for a in anchors):
                removed += k.seconds
                absorbed += 1
    total = sum(k.seconds for k in unfused)
    return Split(removed / total if total > 0 else 0.0, absorbed, len(eliminated), len(groups))


def _kind(k: Any, algos: Mapping[str, str]) -> str:
    """A fused kernel's kind: its pattern, and for a conv the algorithm and output map."""
    return " ".join(filter(None, [str(k.kernel).split("_", 1)[-1], algos.get(k.kernel)]))


def kept_by_kind(
    unfused: Sequence[Any], fused: Sequence[Any], algos: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Per kind of fused kernel (its pattern, and for convs the algorithm and output map from
    the report's ``conv_algo``): how many, the unfused time of their anchors and of what they
    absorbed (their share of R), and ``kept``, the fused kernels' time minus their anchors':
    what the fused kernels still pay for what they absorbed (all of it is saved at kept 0).
    Sorted by kept - R, the kinds that lose most first."""
    groups, _ = _match(unfused, fused)
    rows: dict[str, dict[str, Any]] = {}
    for i, k in enumerate(fused):
        members = groups.get(i, [])
        anchors = _anchors(members) if members else []
        a = sum(x.seconds for x in anchors)
        kind = _kind(k, algos)
        row = rows.setdefault(kind, {"kind": kind, "n": 0, "anchors_ms": 0.0, "R_ms": 0.0,
                                     "kept_ms": 0.0})  # fmt: skip
        row["n"] += 1
        row["anchors_ms"] += 1e3 * a
        row["R_ms"] += 1e3 * (sum(x.seconds for x in members) - a)
        row["kept_ms"] += 1e3 * (k.seconds - a)
    return sorted(rows.values(), key=lambda r: r["R_ms"] - r["kept_ms"])


def kept_paired(
    pairs: Sequence[tuple[Sequence[Any], Sequence[Any]]], algos: Mapping[str, str]
) -> dict[str, float]:
    """Per kind (as ``kept_by_kind``): the sum over its fused kernels of the median, over the
    runs, of the kernel's time minus its anchors' in the unfused profile of the same round
    (``pairs``: (unfused, fused) single-run profiles taken back to back), in ms. Minima pair
    each kernel's luckiest run of each build, which need not be the same moment; this pairs
    the two builds' runs."""
    return per_kind(kept_by_kernel(pairs, algos))


def per_kind(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``kept_by_kernel``'s rows summed per kind: ``kept_paired``."""
    out: dict[str, float] = {}
    for r in rows:
        out[r["kind"]] = out.get(r["kind"], 0.0) + r["kept_ms"]
    return out


def kept_by_kernel(
    pairs: Sequence[tuple[Sequence[Any], Sequence[Any]]], algos: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Per fused kernel that absorbed or replaced unfused ones, medians over the rounds
    (``pairs`` as ``kept_paired``'s) of its anchors' unfused time, of what it absorbed (its
    share of R) and of ``kept``: its time minus its anchors' in the same round. Sorted by
    kept, most first. Where ``kept_paired`` sums a kind, this says which kernels of the kind
    keep the time (session 27: the 1x1 convs right after a conv that wrote a whole 56 x 56 map,
    whose unfused anchors read an input the Relu / Add kernel had just streamed through)."""
    rows: dict[str, dict[str, Any]] = {}
    for unfused, fused in pairs:
        groups, _ = _match(unfused, fused)
        for i, k in enumerate(fused):
            members = groups.get(i, [])
            if not members:
                continue
            anchors = _anchors(members)
            a = sum(x.seconds for x in anchors)
            row = rows.setdefault(str(k.kernel), {
                "kernel": str(k.kernel), "kind": _kind(k, algos),
                "anchors": "+".join(str(x.kernel) for x in anchors),
                "a": [], "r": [], "d": []})  # fmt: skip
            row["a"].append(a)
            row["r"].append(sum(x.seconds for x in members) - a)
            row["d"].append(k.seconds - a)
    out = [
        {
            "kernel": r["kernel"],
            "kind": r["kind"],
            "anchors": r["anchors"],
            "anchors_ms": 1e3 * statistics.median(r["a"]),
            "R_ms": 1e3 * statistics.median(r["r"]),
            "kept_ms": 1e3 * statistics.median(r["d"]),
        }
        for r in rows.values()
    ]
    return sorted(out, key=lambda r: -r["kept_ms"])


def combine_kernels(tables: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``kept_by_kernel`` of several processes as one: per kernel (the builds are the same in
    each process), the median of each figure. Sorted by kept, most first."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for t in tables:
        for r in t:
            by.setdefault(str(r["kernel"]), []).append(r)
    out = []
    for rs in by.values():
        row = dict(rs[0])
        for f in ("anchors_ms", "R_ms", "kept_ms"):
            row[f] = statistics.median(float(r[f]) for r in rs)
        out.append(row)
    return sorted(out, key=lambda r: -r["kept_ms"])


def kernel_table(rows: Sequence[Mapping[str, Any]], top: int) -> str:
    """The ``top`` kernels that keep most and the ``top`` that keep least, then the sums."""
    shown = list(rows) if len(rows) <= 2 * top else [*rows[:top], *rows[-top:]]
    out = [
        "| kernel | kind | anchors (unfused) | anchors ms | R ms | kept ms, paired median |",
        "|---|---|---|---|---|---|",
    ]
    for r in shown:
        out.append(
            f"| {r['kernel']} | {r['kind']} | {r['anchors']} | {r['anchors_ms']:.3f} "
            f"| {r['R_ms']:.3f} | {r['kept_ms']:+.3f} |"
        )
    total_r = sum(r["R_ms"] for r in rows)
    total_kept = sum(r["kept_ms"] for r in rows)
    out.append(f"| all {len(rows)} | | | | {total_r:.3f} | {total_kept:+.3f} |")
    return "\n".join(out)


def detail_table(rows: Sequence[Mapping[str, Any]]) -> str:
    out = [
        "| kind | n | anchors ms | R ms | kept ms | kept / R | kept ms, paired medians |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        share = f"{r['kept_ms'] / r['R_ms']:.2f}" if r["R_ms"] > 0 else "-"
        paired = f"{r['kept_paired_ms']:+.3f}" if "kept_paired_ms" in r else "-"
        out.append(
            f"| {r['kind']} | {r['n']} | {r['anchors_ms']:.3f} | {r['R_ms']:.3f} "
            f"| {r['kept_ms']:+.3f} | {share} | {paired} |"
        )
    return "\n".join(out)


def min_profiles(
    builds: Mapping[bool, Any],
    feeds: Any,
    n: int,
    clock: str = "wall",
    pairs: list[tuple[Any, Any]] | None = None,
) -> dict[bool, list[Any]]:
    """Each build's kernels, each with its fastest of ``n`` single-run profiles (interleaved),
    timed by ``clock`` (``CompiledModel.profile``'s); ``pairs`` (if given) gets each round's
    (unfused, fused) profiles."""
    best: dict[bool, dict[str, Any]] = {False: {}, True: {}}
    for r in range(n):
        got: dict[bool, Any] = {}
        for fusion in (False, True) if r % 2 == 0 else (True, False):
            got[fusion] = builds[fusion].profile(feeds, 1, clock)
            for k in got[fusion]:
                seen = best[fusion].get(k.kernel)
                if seen is None or k.seconds < seen.seconds:
                    best[fusion][k.kernel] = k
        if pairs is not None:
            pairs.append((got[False], got[True]))
    return {f: list(b.values()) for f, b in best.items()}


def bytes_per_run(profile: Sequence[Any], runs: int) -> float:
    return sum((k.bytes_moved or 0) * k.calls for k in profile) / runs


def timed(m: Any, feeds: Any, clock: str) -> float:
    """Seconds of one run of ``m`` by ``clock``: wall, process CPU time, or the on-CPU time of
    its busiest thread."""
    if clock == "threads":
        t0 = on_cpu_ns()
        m.run(feeds)
        t1 = on_cpu_ns()
        return max(t1[k] - t0.get(k, 0) for k in t1) / 1e9
    now = time.process_time if clock == "cpu" else time.perf_counter
    t = now()
    m.run(feeds)
    return now() - t


def runs_for(m: Any, feeds: Any, clock: str, runs: int, min_round_s: float) -> int:
    """At least ``runs``, and enough that a round of ``m`` lasts ``min_round_s``: a 5 ms model
    (the zoo's Inception, R ~0.3 ms) timed by 10 runs a round is 50 ms of evidence, and a
    0.1 ms disturbance moves its ratio by a third."""
    one = statistics.median(timed(m, feeds, clock) for _ in range(3))
    return max(runs, math.ceil(min_round_s / one)) if one > 0 else runs


def time_rounds(
    builds: Mapping[bool, Any],
    timer: Callable[[Any], float],
    warm: Callable[[Any], object],
    runs: int,
    rounds: int,
    interleave: str,
) -> tuple[dict[bool, list[float]], list[float]]:
    """Time the unfused (``False``) and fused (``True``) builds in ``rounds`` rounds of
    ``runs`` runs each; returns each build's per-round medians and the paired differences
    (unfused - fused) the paired saving is the median of.

    ``interleave="run"``: a round alternates single timed runs of the two builds, each pair's
    order flipped (unfused, fused, fused, unfused, ...), and each pair is one difference; each
    timed run follows an untimed run of its own build (``warm``), so it starts from the cache
    state of a model run over and over, as deployed, not from the other build's (timed right
    after the other build, the zoo's Inception, whose data stay in L3 between its own runs,
    read 0.55, 0.55 and 0.48 of R in three processes, each below all three of session 30's
    by blocks, 0.63-0.85). The two timed runs of a pair are two
    run times apart, so a drift of the machine's speed slower than that cancels out of the
    difference, and the flipped orders cancel what is left of it in the median.

    ``"block"``: a round times ``runs`` runs of one build, then of the other (each round's
    order flipped), and each round's difference of medians is one pair -- a drift over a
    block (~0.7 s for ResNet-50) lands on one build; on the shared machine that moved
    ResNet-50's one-thread saving, ~2% of the run, by more than R between processes
    (session 30, docs/history/fusion-efficiency.md)."""
    times: dict[bool, list[float]] = {False: [], True: []}
    diffs: list[float] = []
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        if interleave == "block":
            for fusion in order:
                warm(builds[fusion])
                times[fusion].append(statistics.median(timer(builds[fusion]) for _ in range(runs)))
            diffs.append(times[False][-1] - times[True][-1])
            continue
        got: dict[bool, list[float]] = {False: [], True: []}
        for i in range(runs):
            for fusion in order if i % 2 == 0 else order[::-1]:
                warm(builds[fusion])
                got[fusion].append(timer(builds[fusion]))
            diffs.append(got[False][-1] - got[True][-1])
        for fusion in (False, True):
            times[fusion].append(statistics.median(got[fusion]))
    return times, diffs


def row_clock(clock: str, threads: int) -> str:
    """The clock a row is timed by: ``auto`` is process CPU time at one thread and the
    busiest thread's on-CPU time at more; the others as given."""
    if clock != "auto":
        return clock
    return "cpu" if threads == 1 else "threads"


def measure(
    spec: str,
    threads: int,
    runs: int,
    rounds: int,
    say: Any,
    clock: str = "wall",
    min_round_s: float = 0.0,
    interleave: str = "run",
    cpu: str = "native",
) -> dict[str, Any]:
    import autofusion
    from autofusion.testing import compare
    from autofusion.zoo import sample_inputs

    model = build(spec)
    feeds = sample_inputs(model)
    builds = {}
    for fusion in (False, True):
        say(f"  compiling {spec} ({'fused' if fusion else 'unfused'}, {threads} thread(s))")
        t0 = time.perf_counter()
        builds[fusion] = autofusion.compile(
            model, fusion=fusion, threads=threads, label=spec, cpu=cpu
        )
        say(f"    {time.perf_counter() - t0:.1f} s")
    try:
        ref = builds[False].run(feeds)
        got = builds[True].run(feeds)
        bad = [n for n in ref if not compare(got[n], ref[n]).match]
        if clock == "threads":
            # both builds on all their threads: the count the runtime drops to when a worker
            # starts late (docs/runtime.md) would differ between them on a busy machine
            for m in builds.values():
                m._lib.set_thread_lag_us(1e12)  # pyright: ignore[reportPrivateUsage]
        runs = max(runs_for(m, feeds, clock, runs, min_round_s) for m in builds.values())
        say(f"    {runs} runs a round")
        times, pair_diffs = time_rounds(
            builds,
            lambda m: timed(m, feeds, clock),
            lambda m: m.run(feeds),
            runs,
            rounds,
            interleave,
        )
        # the profiles on the run's own clock: with --clock threads each kernel's time on the
        # calling thread, so the removable share leaves out the waits the run's time does not
        # count (by the wall clock, each of the unfused build's ~3x more kernels also paid a
        # passive wake-up: ResNet-50's R at two threads read 8.09 ms against 3.64 by the wall
        # clock on a quiet machine)
        pclock = "thread" if clock == "threads" else "wall"
        prof = {f: builds[f].profile(feeds, runs, pclock) for f in (False, True)}
        pairs: list[tuple[Any, Any]] = []
        mins = min_profiles(builds, feeds, runs * rounds, pclock, pairs)
        algos = {
            r["kernel"]: f"{r['conv_algo']} {r['shape'].split('->')[1].split()[0]}"
            for r in builds[True].report.get("conv_algo", [])
        }
    finally:
        for m in builds.values():
            m.close()
    by_kernel = kept_by_kernel(pairs, algos)
    kept_runs = per_kind(by_kernel)
    unf, fus = statistics.median(times[False]), statistics.median(times[True])
    paired = statistics.median(pair_diffs)
    split = split_profile(prof[False], prof[True])
    r_s = split.removed_share * unf
    min_unf, min_fus = (sum(k.seconds for k in mins[f]) for f in (False, True))
    min_r = split_profile(mins[False], mins[True]).removed_share * min_unf
    return {
        "model": os.path.basename(spec) if spec.endswith(".onnx") else spec,
        "threads": threads,
        "clock": clock,
        "interleave": interleave,
        "cpu": cpu,
        "unfused_ms": 1e3 * unf,
        "fused_ms": 1e3 * fus,
        "R_ms": 1e3 * r_s,
        "saving_ms": 1e3 * (unf - fus),
        "ratio": (unf - fus) / r_s if r_s > 0 else float("nan"),
        "saving_paired_ms": 1e3 * paired,
        "ratio_paired": paired / r_s if r_s > 0 else float("nan"),
        "min_R_ms": 1e3 * min_r,
        "min_saving_ms": 1e3 * (min_unf - min_fus),
        "min_ratio": (min_unf - min_fus) / min_r if min_r > 0 else float("nan"),
        "kernels_unfused": len(prof[False]),
        "kernels_fused": len(prof[True]),
        "absorbed": split.absorbed,
        "eliminated": split.eliminated,
        "mb_unfused": bytes_per_run(prof[False], runs) / 1e6,
        "mb_fused": bytes_per_run(prof[True], runs) / 1e6,
        "runs": runs,
        "rounds_ms": {
            "unfused": [round(1e3 * t, 3) for t in times[False]],
            "fused": [round(1e3 * t, 3) for t in times[True]],
        },
        "mismatch": bad,
        "kept_by_kind": [
            {**row, "kept_paired_ms": kept_runs.get(row["kind"], 0.0)}
            for row in kept_by_kind(mins[False], mins[True], algos)
        ],
        "kept_by_kernel": by_kernel,
    }


def in_child(
    args: argparse.Namespace, spec: str, threads: int, clock: str, say: Any
) -> dict[str, Any]:
    """One row measured by a fresh process of this script (``--processes 1``)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "row.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--models", spec,
               "--threads", str(threads), "--runs", str(args.runs),
               "--rounds", str(args.rounds), "--min-round-ms", str(args.min_round_ms),
               "--clock", clock, "--interleave", args.interleave, "--cpu", args.cpu,
               "--processes", "1", "--json", out]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if not os.path.exists(out):
            # a bad model or --cpu: the child's one message, as this process would give it
            said = [ln for ln in done.stderr.splitlines() if ln.startswith("fusion_efficiency: ")]
            if done.returncode == 1 and said:
                raise AutofusionError(said[-1].removeprefix("fusion_efficiency: "))
            raise SystemExit(f"fusion_efficiency: the child for {spec} failed:\n{done.stderr}")
        with open(out) as f:
            (row,) = json.load(f)
    say(f"  process: ratio {row['ratio']:.2f}, paired {row['ratio_paired']:.2f}, "
        f"kernel minima {row['min_ratio']:.2f}")  # fmt: skip
    return row


def combine(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The rows of one model measured in several processes as one: each figure the median
    of the processes' (the ratios too, not recomputed from medians), the rounds of all, the
    kept-by-kind table of the process whose kernel-minima ratio is the median, the
    per-kernel table with each kernel's medians (``combine_kernels``), and each process's
    ratios (``ratios``, ``ratios_paired``, ``min_ratios``; the table shows their ranges)."""
    out: dict[str, Any] = dict(rows[0])
    for key, value in rows[0].items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):  # counts (threads, runs, kernels) stay whole numbers
            out[key] = statistics.median_low(r[key] for r in rows)
        elif isinstance(value, float):
            out[key] = statistics.median(r[key] for r in rows)
    out["rounds_ms"] = {
        b: [t for r in rows for t in r["rounds_ms"][b]] for b in ("unfused", "fused")
    }
    out["mismatch"] = sorted({n for r in rows for n in r["mismatch"]})
    mid = sorted(rows, key=lambda r: r["min_ratio"])[len(rows) // 2]
    out["kept_by_kind"] = mid["kept_by_kind"]
    out["kept_by_kernel"] = combine_kernels([r["kept_by_kernel"] for r in rows])
    out["ratios"] = [round(r["ratio"], 2) for r in rows]
    out["ratios_paired"] = [round(r["ratio_paired"], 2) for r in rows]
    out["min_ratios"] = [round(r["min_ratio"], 2) for r in rows]
    out["processes"] = len(rows)
    return out


def _spread(r: Mapping[str, Any], key: str) -> str:
    """`` (lo-hi)``: the range of a ratio over a combined row's processes (``combine``), or
    nothing for one process: with R a few % of the run, the processes of one machine spread
    by more than the distance to the 0.8 bar, so a median alone hides whether it was met."""
    vals = r.get(key)
    if r.get("processes", 1) < 2 or not vals:
        return ""
    return f" ({min(vals):.2f}-{max(vals):.2f})"


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    out = [
        "| model | threads (clock) | unfused ms | fused ms | R ms | saving ms | saving / R "
        "| paired saving ms | paired saving / R "
        "| saving / R, kernel minima (R ms) | kernels (absorbed, removed) "
        "| MB moved unfused -> fused |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['threads']} ({r['clock']}) "
            f"| {r['unfused_ms']:.2f} | {r['fused_ms']:.2f} "
            f"| {r['R_ms']:.2f} | {r['saving_ms']:.2f} | {r['ratio']:.2f}{_spread(r, 'ratios')} "
            f"| {r['saving_paired_ms']:.2f} "
            f"| {r['ratio_paired']:.2f}{_spread(r, 'ratios_paired')} "
            f"| {r['min_ratio']:.2f}{_spread(r, 'min_ratios')} ({r['min_R_ms']:.2f}) "
            f"| {r['kernels_unfused']} -> {r['kernels_fused']} ({r['absorbed']}, "
            f"{r['eliminated']}) | {r['mb_unfused']:.1f} -> {r['mb_fused']:.1f} |"
        )
    return "\n".join(out)


def measure_all(
    args: argparse.Namespace, thread_counts: Sequence[int], say: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Every row --models x --threads asks for, in this process or in --processes children."""
    rows = []
    for spec in args.models.split(","):
        for threads in thread_counts:
            clock = row_clock(args.clock, threads)
            say(f"{spec}, {threads} thread(s), clock {clock}; load average "
                f"{os.getloadavg()[0]:.1f}")  # fmt: skip
            if args.processes > 1:
                row = combine(
                    [in_child(args, spec, threads, clock, say) for _ in range(args.processes)]
                )
                say(
                    f"  per process: ratio {row['ratios']}, paired {row['ratios_paired']}, "
                    f"kernel minima {row['min_ratios']}"
                )
            else:
                row = measure(
                    spec,
                    threads,
                    args.runs,
                    args.rounds,
                    say,
                    clock,
                    args.min_round_ms / 1e3,
                    args.interleave,
                    args.cpu,
                )
            say(
                f"  ratio {row['ratio']:.2f} (paired {row['ratio_paired']:.2f}); "
                f"rounds {row['rounds_ms']}"
            )
            if row["mismatch"]:
                say(f"  OUTPUTS DIFFER between the builds: {row['mismatch']}")
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--models", default=DEFAULT_MODELS, help="comma-separated NAME, NAME@SEQ or FILE.onnx"
    )
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round and build")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (see --interleave)")
    ap.add_argument(
        "--min-round-ms",
        type=float,
        default=500.0,
        help="more runs per round for a fast model, so that each build's round lasts at "
        "least this long (the kernel minima then come from runs x rounds profiles too)",
    )
    ap.add_argument(
        "--interleave",
        choices=("run", "block"),
        default="run",
        help="how a round alternates the two builds: single runs, each neighbouring pair one "
        "paired difference (run, the default), or --runs runs of one build then of the "
        "other, each round one difference of medians (block, as before session 31)",
    )
    ap.add_argument(
        "--processes",
        type=int,
        default=3,
        help="measure each row in this many fresh processes (each loads the two builds "
        "again, so their memory lands elsewhere) and report the median of each figure and "
        "its range (default 3: one process is one draw; 1 measures in this process)",
    )
    ap.add_argument(
        "--cpu",
        choices=tuple(CPUS),
        default="native",
        help="the instruction set both builds are compiled for (as autofusion-compile --cpu; "
        "one this machine can load): e.g. x86-64-v3 measures what fusion saves on an AVX2 "
        "machine, whose kernels have no AVX-512",
    )
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ap.add_argument(
        "--detail",
        action="store_true",
        help="per model and thread count, a table of what each kind of fused kernel still "
        "pays for what it absorbed, by kernel minima (kept_by_kind)",
    )
    ap.add_argument(
        "--kernels",
        type=int,
        default=0,
        metavar="N",
        help="per model and thread count, the N fused kernels that keep most of what they "
        "absorbed and the N that keep least, by paired medians (kept_by_kernel; with "
        "--processes, the median of each kernel's figures over the processes)",
    )
    ap.add_argument(
        "--clock",
        choices=("auto", "wall", "cpu", "threads"),
        default="auto",
        help="time runs by process CPU time at one thread and the busiest thread's on-CPU "
        "time at more (auto, the default), by the wall clock, by process CPU time (1 thread "
        "only) or by the busiest thread's on-CPU time",
    )
    args = ap.parse_args(argv)
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads {args.threads}: comma-separated whole numbers, e.g. 1,2")
    if min(thread_counts) < 1:
        ap.error(f"--threads {args.threads}: each count at least 1")
    if args.processes < 1:
        ap.error(f"--processes {args.processes}: at least 1")
    if args.clock == "cpu" and thread_counts != [1]:
        ap.error("--clock cpu needs --threads 1 (CPU time of several threads counts spinning)")
    clocks = {row_clock(args.clock, t) for t in thread_counts}
    if "threads" in clocks and os.environ.get("OMP_WAIT_POLICY") != "passive":
        # libgomp reads it once: a waiting thread must sleep, not spin, for its CPU time to
        # be its own work
        os.environ["OMP_WAIT_POLICY"] = "passive"
        os.execv(sys.executable, [sys.executable, *sys.argv])

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        rows = measure_all(args, thread_counts, say)
    except AutofusionError as e:  # a bad model, --cpu or option: one message, no traceback
        say(f"fusion_efficiency: {e}")
        return 1
    print(table(rows))
    if args.detail:
        for r in rows:
            print(f"\n{r['model']}, {r['threads']} thread(s), kernel minima:\n")
            print(detail_table(r["kept_by_kind"]))
    if args.kernels > 0:
        for r in rows:
            print(f"\n{r['model']}, {r['threads']} thread(s), per kernel (paired medians):\n")
            print(kernel_table(r["kept_by_kernel"], args.kernels))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if any(r["mismatch"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
