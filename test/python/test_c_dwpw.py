"""Depthwise -> pointwise conv chains (``fuse-conv-chain``, ``afrt_dwpw_f32``) against
onnxruntime.

Odd shapes -- H/W not multiples of the row band, stride 2, asymmetric and zero padding,
channel counts not multiples of 16, a channel multiplier, dilation 2, batch 3, with and
without biases, with the depthwise clamp (none, Relu, Relu6) and the pointwise epilogue
(none, Relu6, SiLU, residual Add + Relu), channels past one GEMM k block -- are forced into
chain kernels with ``aggressiveness: 3`` (which bypasses the cost model) so every case runs
the fused kernel, on AVX-512 (the blocked band where it applies, else the channel-major one)
and AVX2, one, two and three threads; the blocked band's rule is compared with the
runtime's. The cost model's decision (fuse a
big intermediate, refuse one that stays in L2), the ``patterns: {conv_chain: false}``
switch, black/whitelists, NaN propagation, the interpreter before and after the pass and an
ASan/UBSan build are checked on their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from dwpw_models import chain_model

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close

CASES: list[dict[str, object]] = [
    {"c": 17, "h": 13, "w": 11, "stride": 2, "act": "relu6", "epi": "bias_add_relu", "kout": 19},
    {"c": 24, "h": 30, "w": 7, "act": "relu", "kout": 33, "mult": 2},
    {"c": 8, "h": 5, "w": 9, "act": "none", "epi": "relu6", "kout": 5, "bias": False,
     "pads": (0, 1, 2, 0)},
    {"c": 40, "h": 37, "w": 29, "stride": 2, "k": 5, "pads": (2, 2, 2, 2), "epi": "silu",
     "kout": 24},
    {"c": 3, "h": 1, "w": 23, "act": "relu6", "kout": 7, "pads": (1, 1, 1, 1)},
    {"c": 33, "h": 64, "w": 17, "stride": 1, "k": 3, "pads": (0, 0, 0, 0), "kout": 16},
    {"c": 12, "h": 19, "w": 21, "n": 3, "dil": 2, "pads": (2, 2, 2, 2), "act": "relu",
     "epi": "bias_add_relu", "kout": 9},
    # afrt_dwpw_f32's blocked band (AVX-512, at least 16 pointwise output channels; the
    # first and fourth cases take it too): channels past one k block (AFRT_KC = 256), no
    # clamp, 5x5 without biases, residual Add + Relu, Relu6, SiLU
    {"c": 300, "h": 9, "w": 7, "act": "relu6", "epi": "bias_add_relu", "kout": 40},
    {"c": 50, "h": 15, "w": 13, "stride": 2, "act": "relu", "epi": "relu6", "kout": 33},
    {"c": 96, "h": 14, "w": 14, "act": "none", "epi": "silu", "kout": 64},
    {"c": 20, "h": 23, "w": 5, "k": 5, "pads": (2, 2, 2, 2), "kout": 17, "bias": False},
    # the blocked band's row tiles (afrt_cc_mr_): 7 or 8 rows where they pad a band's
    # positions more than 8% less than 12 (the cases above: 7x6 -> 42, 9x7 -> 63 in 7-row
    # tiles), 12 rows here (8x6 -> 48), 8 rows on a 4x4 map (16)
    {"c": 40, "h": 8, "w": 6, "act": "relu6", "epi": "bias_add_relu", "kout": 48},
    {"c": 36, "h": 4, "w": 4, "act": "relu6", "epi": "bias_add_relu", "kout": 40},
    # a 7x7 map (MobileNet-V2's last stage, smaller) with one k block of channels: one band a
    # thread at two and three threads (afrt_cc_blocked_bands_), 3 + 4 and 2 + 2 + 3 rows; the
    # 9x7 map of 300 channels above is split by channels (afrt_cc_ksplit_, 256 + 44)
    {"c": 200, "h": 7, "w": 7, "act": "relu6", "epi": "bias_add_relu", "kout": 40},
    # K = 16 on the blocked band's 16-wide tile (afrt_cc_uk16_; the 33-channel case above
    # too): MobileNet-V2's first block (32 -> 16, a width of 112 = 7 x 16), an odd width in
    # 7-row tiles, two k blocks (acc) with SiLU
    {"c": 32, "h": 20, "w": 112, "act": "relu6", "kout": 16},
    {"c": 40, "h": 9, "w": 37, "stride": 2, "act": "relu", "epi": "bias_add_relu", "kout": 16},
    {"c": 270, "h": 5, "w": 11, "epi": "silu", "kout": 16},
]  # fmt: skip
# the cases on the blocked band where the build has AVX-512 (clib.dwpw_algo)
BLOCKED = {0, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.uniform(-2, 2, dims).astype(np.float32)
    return feeds


def _config(tmp_path: Path, data: dict[str, object]) -> str:
    path = tmp_path / "fusion.json"
    path.write_text(json.dumps(data))
    return str(path)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], config: str | None = None,
         cpu: str = "native", threads: int = 1) -> dict[str, object]:  # fmt: skip
    ref = onnxruntime_outputs(model, feeds)
    m = autofusion.compile(model, config=config, cpu=cpu, threads=threads, cache=False)
    try:
        got = m.run(feeds)
        for name, r in ref.items():
            assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")
        return m.report
    finally:
        m.close()


def _chains(report: dict[str, object]) -> list[dict[str, object]]:
    groups = report["groups"]
    assert isinstance(groups, list)
    return [g for g in groups if str(g["pattern"]).startswith("chain_")]


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("native", 3), ("x86-64-v3", 2)]
)
def test_forced_chains_match_onnxruntime(tmp_path: Path, cpu: str, threads: int) -> None:
    """Every case as a chain matches onnxruntime; the report names the band each one runs
    (``clib.dwpw_algo``): blocked where the build has AVX-512, else channel-major."""
    from autofusion.runtime.toolchain import cpu_has_avx512

    model = chain_model(CASES, seed=1)
    report = _run(model, _feeds(model, 1), _config(tmp_path, {"aggressiveness": 3}), cpu,
                  threads)  # fmt: skip
    chains = _chains(report)
    assert len(chains) == len(CASES), [g["pattern"] for g in chains]
    assert {g["decided_by"] for g in chains} == {"rules"}  # level 3 skips the cost model
    rows = report["conv_algo"]
    assert isinstance(rows, list)
    algo = {o: r["conv_algo"] for r in rows for o in r["origins"] if str(o).startswith("dw")}
    avx512 = cpu_has_avx512(cpu)
    assert [algo[f"dw{i}"] for i in range(len(CASES))] == [
        "dwpw_blocked" if avx512 and i in BLOCKED else "dwpw" for i in range(len(CASES))
    ]


_RULE_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
int main(void) {
    afrt_conv_params p[2];
    while (1) {
        for (int j = 0; j < 2; ++j)
            for (int i = 0; i < 18; ++i)
                if (scanf("%ld", (long *)&(&p[j].N)[i]) != 1) return 0;
        printf("%d\n", afrt_cc_blocked_applies(&p[0], &p[1]));
    }
}
"""


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_blocked_rule_matches_the_runtime(tmp_path: Path, cpu: str) -> None:
    """``clib.dwpw_algo`` (the report's and ``fuse-conv-chain``'s rule) says ``dwpw_blocked``
    exactly where ``afrt_cc_blocked_applies`` takes the blocked band, on builds with and
    without AVX-512: channel multipliers, dilation, K around 16."""
    import itertools
    import subprocess

    from autofusion.dialects import clib
    from autofusion.runtime import toolchain

    src = tmp_path / "rule.c"
    src.write_text(_RULE_DRIVER)
    exe = tmp_path / "rule"
    march = "native" if cpu == "native" else cpu
    subprocess.run(["cc", "-O1", "-std=c11", f"-march={march}", f"-I{toolchain.INCLUDE_DIR}",
                    str(src), "-o", str(exe), "-lm"], check=True)  # fmt: skip
    pairs = []
    for c, mult, dil, kout, s in itertools.product((8, 17, 300), (1, 2), (1, 2), (8, 16, 17, 64),
                                                   (1, 2)):  # fmt: skip
        h, r = 9, 3
        oh = (h + 2 - dil * (r - 1) - 1) // s + 1
        dw = [1, c, h, h, c * mult, r, r, oh, oh, s, s, 1, 1, 1, 1, dil, dil, c]
        pw = [1, c * mult, oh, oh, kout, 1, 1, oh, oh, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        pairs.append((dw, pw))
    text = "".join(" ".join(map(str, [*d, *p])) + "\n" for d, p in pairs)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    got = [int(v) for v in out.stdout.split()]
    want = [int(clib.dwpw_algo(d, p, toolchain.cpu_has_avx512(cpu)) == "dwpw_blocked")
            for d, p in pairs]  # fmt: skip
    assert got == want
    assert 0 < sum(want) < len(want) or not toolchain.cpu_has_avx512(cpu)


_BANDS_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
int main(void) {
    afrt_conv_params p;
    int nth;
    while (scanf("%d", &nth) == 1) {
        for (int i = 0; i < 18; ++i)
            if (scanf("%ld", (long *)&(&p.N)[i]) != 1) return 1;
        printf("%ld %ld\n", (long)afrt_cc_blocked_bands_(&p, 1),
               (long)afrt_cc_blocked_bands_(&p, nth));
    }
    return 0;
}
"""


def test_blocked_bands_deal_evenly() -> None:
    """``afrt_cc_blocked_bands_``: at one thread the tile budget's bands; with threads the
    fewest at or above that whose tasks (images x bands) deal evenly over the threads, at
    most one band a row (else the old rule: a 3-row map at four threads, one band a row):
    MobileNet-V2's 7x7 and 14x14 maps one band a thread at two threads (the
    two-tasks-a-thread rule made four), its 56x56 map 8 bands, not 7."""
    import subprocess
    import tempfile

    from autofusion.runtime import toolchain

    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "bands.c", Path(tmp) / "bands"
        src.write_text(_BANDS_DRIVER)
        subprocess.run(["cc", "-O1", "-std=c11", "-march=native", f"-I{toolchain.INCLUDE_DIR}",
                        str(src), "-o", str(exe), "-lm"], check=True)  # fmt: skip
        # (threads, images, channels, map, kernel/stride) -> the depthwise conv's params
        cases = [(2, 1, 960, 7, 1), (2, 1, 576, 14, 2), (2, 1, 576, 14, 1), (2, 1, 144, 56, 1),
                 (3, 1, 960, 7, 1), (2, 2, 960, 7, 1), (3, 2, 144, 56, 1), (2, 1, 64, 1, 1),
                 (4, 1, 960, 3, 1)]  # fmt: skip
        text = ""
        for nth, n, c, h, s in cases:
            oh = (h + 2 - 3) // s + 1
            text += " ".join(
                map(str, [nth, n, c, h, h, c, 3, 3, oh, oh, s, s, 1, 1, 1, 1, 1, 1, c])
            )
            text += "\n"
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    got = [tuple(int(v) for v in line.split()) for line in out.stdout.splitlines()]
    for (nth, n, _c, h, s), (one, many) in zip(cases, got, strict=True):
        oh = (h + 2 - 3) // s + 1
        assert one <= many <= oh, (nth, n, h, one, many)
        if any((n * e) % nth == 0 for e in range(one, oh + 1)):  # the fewest that deal evenly
            assert (n * many) % nth == 0
            assert all((n * e) % nth for e in range(one, many))
    assert [m for _, m in got] == [2, 2, 2, 8, 3, 1, 9, 1, 3], got


def test_small_map_split_same_bits_at_thread_counts(tmp_path: Path) -> None:
    """``afrt_cc_ksplit_``: a small map in one band with more than one k block of channels
    runs as two parts by channel blocks (whole k blocks nearest half, then the rest), summed,
    at any thread count: one build at 1, 2 and 3 threads gives the same bits and matches
    onnxruntime. 520 channels (256 + 264) at 7x7 with the residual, 300 (256 + 44, a part
    block) at 9x7, 260 (256 + 4) at 4x4 with SiLU; 200 at 7x7 (one k block) keeps its rows."""
    from runtime_drivers import same_bits_at_thread_counts

    cases = [{"c": 520, "h": 7, "w": 7, "act": "relu6", "epi": "bias_add_relu", "kout": 40},
             {"c": 300, "h": 9, "w": 7, "act": "relu6", "kout": 33},
             {"c": 260, "h": 4, "w": 4, "epi": "silu", "kout": 24},
             {"c": 200, "h": 7, "w": 7, "act": "relu", "kout": 40}]  # fmt: skip
    model = chain_model(cases, seed=5)
    report = same_bits_at_thread_counts(
        model, _feeds(model, 5), "native", config=_config(tmp_path, {"aggressiveness": 3})
    )
    assert len(_chains(report)) == len(cases)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_sixteen_wide_tile_same_bits_at_thread_counts(tmp_path: Path, cpu: str) -> None:
    """K = 16 on the blocked band (``afrt_cc_uk16_``: 2 x 12, 2 x 8 and 2 x 7 row tiles,
    then one at a band's end): one build at 1, 2 and 3 threads gives the same bits and
    matches onnxruntime -- a 112-wide map (7 x 16 positions a row), a 13 x 29 map, and 300
    channels (two k blocks: the second accumulates); on x86-64-v2 the channel-major band."""
    from runtime_drivers import same_bits_at_thread_counts

    cases = [{"c": 32, "h": 24, "w": 112, "act": "relu6", "kout": 16},
             {"c": 48, "h": 13, "w": 29, "act": "relu", "epi": "bias_add_relu", "kout": 16},
             {"c": 300, "h": 6, "w": 9, "act": "relu6", "kout": 16}]  # fmt: skip
    model = chain_model(cases, seed=7)
    report = same_bits_at_thread_counts(
        model, _feeds(model, 7), cpu, config=_config(tmp_path, {"aggressiveness": 3})
    )
    chains = _chains(report)
    assert len(chains) == len(cases)
    from autofusion.runtime.toolchain import cpu_has_avx512

    rows = report["conv_algo"]
    assert isinstance(rows, list)
    algos = {r["conv_algo"] for r in rows if any(str(o).startswith("dw") for o in r["origins"])}
    assert algos == {"dwpw_blocked" if cpu_has_avx512(cpu) else "dwpw"}


def test_cost_model_decides_and_the_switch_turns_it_off(tmp_path: Path) -> None:
    """A 40 x 100 x 100 intermediate (1.6 MB: twice that exceeds L2) is fused,
    decided by the cost model; a 24 x 20 x 20 one stays in L2 and is refused with ``cost``.
    ``patterns: {conv_chain: false}`` forms no chain and records ``disabled``; both builds
    match onnxruntime."""
    cases = [{"c": 40, "h": 100, "w": 100, "kout": 24, "epi": "bias_add_relu"},
             {"c": 24, "h": 20, "w": 20, "kout": 16}]  # fmt: skip
    model = chain_model(cases, seed=2)
    feeds = _feeds(model, 2)
    report = _run(model, feeds)
    chains = _chains(report)
    assert [(g["pattern"], g["decided_by"]) for g in chains] == [
        ("chain_conv_relu6_conv_add_relu", "cost")
    ]
    assert chains[0]["origins"] == ["dw0", "act0", "pw0", "add0", "relu0"]
    refusals = report["refusals"]
    assert isinstance(refusals, list)
    cost = [r for r in refusals if r["code"] == "cost" and "pw1" in r["nodes"]]
    assert len(cost) == 1, refusals
    assert "stays in L2" in cost[0]["reason"]
    off = _run(model, feeds, _config(tmp_path, {"patterns": {"conv_chain": False}}))
    assert _chains(off) == []
    off_refusals = off["refusals"]
    assert isinstance(off_refusals, list)
    assert any(r["code"] == "disabled" and "conv_chain" in r["reason"] for r in off_refusals)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_nan_propagates_through_the_clamp(tmp_path: Path, cpu: str) -> None:
    """A NaN input reaches the pointwise output through the depthwise window and the
    Relu/Relu6 clamp of the tile (ONNX propagates NaN), as in onnxruntime."""
    model = chain_model(CASES[:2], seed=3)
    feeds = _feeds(model, 3)
    feeds["x0"][0, 4, 6, 5] = np.nan
    feeds["x1"][0, 0, 29, 0] = np.nan
    ref = onnxruntime_outputs(model, feeds)
    assert all(np.isnan(r).any() for r in ref.values())  # the cases do reach NaN
    report = _run(model, feeds, _config(tmp_path, {"aggressiveness": 3}), cpu)
    assert len(_chains(report)) == 2


def test_chain_kernel_sanitizer_clean(tmp_path: Path) -> None:
    """The chain kernel under ASan/UBSan, two threads: odd sizes big enough that the cost
    model fuses them in the default pipeline (stride 1 and 2, bands ending mid-image)."""
    from autofusion.lowering.c.testing import sanitized_model_c

    cases = [{"c": 37, "h": 101, "w": 97, "kout": 21, "epi": "relu6"},
             {"c": 24, "h": 255, "w": 253, "stride": 2, "kout": 17, "act": "relu"}]  # fmt: skip
    model = chain_model(cases, seed=4)
    text = sanitized_model_c(model, _feeds(model, 4), tmp_path)
    assert text.count("afrt_dwpw_f32(") == 2


def test_chains_take_a_run_time_batch(tmp_path: Path) -> None:
    """One build for batch 1..4 (``one_build``): the chain kernels take the batch as a
    run-time param (``clib.dwpw``'s dyn operands), under the built-in clamp epilogue and a
    generated one (SiLU, which reads the batch from its context); each batch matches
    onnxruntime."""
    cases = [{"c": 17, "h": 13, "w": 11, "stride": 2, "act": "relu6", "epi": "relu6",
              "kout": 19, "n": "batch"},
             {"c": 12, "h": 19, "w": 21, "dil": 2, "pads": (2, 2, 2, 2), "act": "relu",
              "epi": "silu", "kout": 9, "n": "batch"}]  # fmt: skip
    model = chain_model(cases, seed=5)
    m = autofusion.compile(model, config=_config(tmp_path, {"aggressiveness": 3}), threads=1,
                           one_build=True, dynamic={"batch": (1, 4)}, cache=False)  # fmt: skip
    try:
        assert len(_chains(m.report)) == 2
        assert (Path(m.directory) / "model.c").read_text().count("afrt_dwpw_f32(") == 2
        rng = np.random.default_rng(5)
        for batch in (1, 3, 4):
            feeds = {
                f"x{i}": rng.uniform(-2, 2, (batch, c["c"], c["h"], c["w"])).astype(np.float32)
                for i, c in enumerate(cases)
            }
            got = m.run(feeds)
            for name, r in onnxruntime_outputs(model, feeds).items():
                assert_close(got[name], r, f"{name} at batch {batch}")
    finally:
        m.close()


def test_pass_preserves_semantics_in_the_interpreter() -> None:
    """The numpy interpreter gives the same outputs before and after ``fuse-conv-chain``
    (forced at aggressiveness 3), and the chain kernels hold both convs."""
    from autofusion.frontend import import_onnx
    from autofusion.interpreter import run_module
    from autofusion.passes.fuse_conv_bn_relu import fuse_conv_chains as fuse_conv_bn
    from autofusion.passes.fuse_conv_chain import fuse_dwpw_chains
    from autofusion.pipeline import run_tensor_passes
    from autofusion.policy.engine import FusionPolicy

    model = chain_model(CASES[:3], seed=5)
    feeds = _feeds(model, 5)
    module = import_onnx(model, progress=False)
    run_tensor_passes(module, groups=("cleanup",))
    policy = FusionPolicy.resolve(aggressiveness=3)
    fuse_conv_bn(module, policy)
    before = run_module(module, feeds)
    assert fuse_dwpw_chains(module, policy) == 3
    module.verify()
    after = run_module(module, feeds)
    for name, ref in before.items():
        assert_close(after[name], ref, name)
    ref_ort = onnxruntime_outputs(model, feeds)
    for name, ref in ref_ort.items():
        assert_close(after[name], ref, f"{name} vs onnxruntime")


@pytest.mark.parametrize(
    ("rules", "formed", "code"),
    [({"whitelist": ["Clip->Conv"]}, 1, None), ({"blacklist": ["Clip->Conv"]}, 0, "blacklisted"),
     ({}, 0, "cost")],
)  # fmt: skip
def test_policy_rules_reach_the_chain(tmp_path: Path, rules: dict[str, object], formed: int,
                                      code: str | None) -> None:  # fmt: skip
    """A small pair the cost model refuses: a whitelisted ``Clip->Conv`` forms it anyway
    (``decided_by = "rules"``), a blacklisted one is refused by the rules."""
    from autofusion.frontend import import_onnx
    from autofusion.passes.fuse import iter_kernels
    from autofusion.passes.fuse_conv_bn_relu import fuse_conv_chains as fuse_conv_bn
    from autofusion.passes.fuse_conv_chain import fuse_dwpw_chains
    from autofusion.pipeline import run_tensor_passes
    from autofusion.policy.engine import FusionPolicy
    from autofusion.policy.reasons import read_refusals

    module = import_onnx(chain_model([{"c": 8, "h": 9, "w": 7, "kout": 4}], seed=6),
                         progress=False)  # fmt: skip
    run_tensor_passes(module, groups=("cleanup",))
    policy = FusionPolicy.resolve(_config(tmp_path, rules))
    fuse_conv_bn(module, policy)
    assert fuse_dwpw_chains(module, policy) == formed
    chains = [k for k in iter_kernels(module) if k.pattern_name.startswith("chain_")]
    assert len(chains) == formed
    if formed:
        assert chains[0].attributes["fusion.decided_by"].data == "rules"  # type: ignore[attr-defined]
    codes = {r.code for r in read_refusals(module) if "pw0" in r.nodes}
    assert codes == ({code} if code else set())


def test_predicted_work_of_a_chain_kernel() -> None:
    """``predict.op_work`` of a chain kernel as ``afrt_dwpw_f32`` runs it: the 3.2 MB
    intermediate moves through L2 only (it would go to memory as a plain buffer), and each
    conv's FLOPs run at its own share of the GEMM roof (time-weighted efficiency). The
    output (8 channels, 0.4 MB) fits the L2 of any machine the cost model describes; with 24
    channels (1.2 MB) it did not on a 1 MiB L2, and the premise failed there, not the model."""
    from autofusion.analysis import predict
    from autofusion.analysis.hardware import hardware_for
    from autofusion.frontend import import_onnx
    from autofusion.passes.fuse import iter_kernels
    from autofusion.pipeline import run_tensor_passes

    model = chain_model([{"c": 64, "h": 112, "w": 112, "kout": 8, "act": "relu"}], seed=7)
    module = import_onnx(model, progress=False)
    run_tensor_passes(module)
    (kernel,) = [k for k in iter_kernels(module) if k.pattern_name.startswith("chain_")]
    hw = hardware_for("cpu")
    work = predict.op_work(kernel, hw)
    body = [o for o in kernel.body.block.ops if o.name == "nn.conv"]
    dw, pw = body
    mid = 64 * 112 * 112 * 4
    x, y = 64 * 112 * 112 * 4, 8 * 112 * 112 * 4
    assert mid > hw.fused_cache_bytes > y
    assert work.mem_bytes == x  # the input only (the output fits L2): no intermediate
    assert work.l2_bytes >= x + y + 2 * mid
    f_dw, f_pw = predict.op_flops(dw), predict.op_flops(pw)
    slow = f_dw / predict.contraction_efficiency(dw, 16) + f_pw / predict.contraction_efficiency(
        pw, 16
    )
    assert work.gemm_efficiency == pytest.approx((f_dw + f_pw) / slow)
