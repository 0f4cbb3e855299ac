"""Threads on a busy machine (docs/runtime.md, "Threads on a busy machine").

Every parallel region stamps when each worker starts; when a worker starts too late the
library runs later regions on the threads that were on time, and probes later whether all are
free again. ``af_set_thread_lag_us(-1)`` (``ModelLibrary.set_thread_lag_us``) makes every
worker of every region count as late, so these tests take the contended path on any machine:
outputs still match onnxruntime at 1, 2 and 3 threads (runtime kernels and a generated loop
both run on fewer threads), the count drops to one, and it climbs back once workers keep time.
No timings are asserted.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.lowering.c.testing import build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary
from autofusion.testing import assert_close

# A generated parallel loop: the region the C printer writes for a `c.parallel` loop.
GENERATED_REGION = "AFRT_OMP(parallel num_threads(afrt_threads_now()))"


def _model() -> onnx.ModelProto:
    """A 3x3 conv + Relu big enough for afrt's tiles to go parallel (4.7 M multiply-adds), and
    a Sin of a second input, a generated elementwise loop of 65536 elements (parallel)."""
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (32, 16, 3, 3)).astype(np.float32) / 12.0
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
        helper.make_node("Sin", ["x2"], ["z"], name="sin"),
    ]
    g = helper.make_graph(
        nodes,
        "contention",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 64, 32, 32]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 32]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 64, 32, 32]),
        ],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[onnx.ModelProto, Path]:
    model = _model()
    work = tmp_path_factory.mktemp("contention")
    build(compile_onnx(model), work)
    assert GENERATED_REGION in (work / "model.c").read_text()
    return model, work


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {
        "x": rng.uniform(-2, 2, (1, 16, 32, 32)).astype(np.float32),
        "x2": rng.uniform(-3, 3, (1, 64, 32, 32)).astype(np.float32),
    }


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_late_workers_drop_threads_and_outputs_match(
    built: tuple[onnx.ModelProto, Path], threads: int
) -> None:
    """Every worker counted late: the library falls back to one thread after its first
    parallel region, outputs match onnxruntime and, bit for bit, the same library's outputs
    with all threads (work is split for the configured count however many threads run it);
    once workers keep time again a probe region restores the full count."""
    model, work = built
    feeds = _feeds()
    ref = onnxruntime_outputs(model, feeds)
    lib = ModelLibrary(work / "libmodel.so", work / "weights.bin", threads)
    try:
        lib.set_thread_lag_us(1e9)  # never late: all threads, whatever the machine's load
        full = lib.run(feeds)
        assert lib.threads_active() == threads
        lib.set_thread_lag_us(-1)
        for _ in range(3):
            got = lib.run(feeds)
            for name in ("y", "z"):
                assert_close(got[name], ref[name], f"{name} at {threads} threads, workers late")
                np.testing.assert_array_equal(got[name], full[name])
        assert lib.threads_active() == 1
        # Workers on time from now on: the next probe (the wait doubles per late probe, to
        # at most AFRT_PROBE_MAX_MS = 320 ms) restores the count.
        lib.set_thread_lag_us(1e9)
        for _ in range(500):
            got = lib.run(feeds)
            if lib.threads_active() == threads:
                break
            time.sleep(0.002)
        assert lib.threads_active() == threads
        for name in ("y", "z"):
            assert_close(got[name], ref[name], f"{name} at {threads} threads, recovered")
    finally:
        lib.close()


def test_every_runtime_region_asks_for_its_threads() -> None:
    """Every parallel region of the runtime headers takes its thread count from
    afrt_threads_now() and stamps arrivals, so the lateness rule sees (and steers) all of
    them: a region that used afrt_num_threads_ directly would wait for a late worker again."""
    from autofusion.runtime import toolchain

    for header in sorted(toolchain.INCLUDE_DIR.glob("afrt*.h")):
        text = header.read_text()
        regions = [s for s in text.splitlines() if s.lstrip().startswith("AFRT_OMP(parallel")]
        for line in regions:
            assert "num_threads(afrt_threads_now())" in line, f"{header.name}: {line.strip()}"
        assert text.count("afrt_arrive_();") >= len(regions), header.name


@pytest.fixture(scope="module")
def lag_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autofusion.runtime import toolchain

    src = Path(__file__).parent / "runtime_c" / "afrt_lag_driver.c"
    out = tmp_path_factory.mktemp("lag") / "afrt_lag_driver"
    cmd = [
        toolchain.c_compiler(), "-std=c11", "-O1", "-fopenmp", *toolchain.WERROR_FLAGS,
        *toolchain.include_flags(), str(src), "-o", str(out), *toolchain.link_flags(),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


@pytest.mark.parametrize(
    ("pattern", "threads"),
    [
        ("oo", "22"),
        # One late region alone (a worker waking from sleep after a serial stretch) keeps
        # both threads, however often it recurs between on-time regions.
        ("Lo", "22"),
        ("LoLoLo", "222222"),
        # Two late regions in a row are contention: the regions after them run on one
        # thread (the third letter's region: the cut is judged when the next one starts).
        ("LLo", "221"),
        ("LoLLoo", "222211"),
        # A first late region, then one on time, then late again: no cut.
        ("LoL" + "o", "2222"),
    ],
)
def test_only_a_second_late_region_in_a_row_cuts(
    lag_driver: Path, pattern: str, threads: str
) -> None:
    """The streak rule of afrt_judge_region_, on made-up times (docs/runtime.md, "Threads on
    a busy machine"): the thread count of each region of a two-thread library."""
    got = subprocess.run(
        [str(lag_driver), pattern], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert got == threads
