"""``autofusion-bench --against``: every engine in its own process, rounds interleaved.

Checks the protocol and the result's shape and numerics, never the times themselves (the
machine is shared; speed is measured in benchmarks, not asserted in tests).
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

from autofusion.errors import AutofusionError
from autofusion.tools import bench as bench_cli
from autofusion.tools import peers
from autofusion.zoo import get_model


def test_against_both_peers_reports_every_engine_and_per_round_ratios() -> None:
    r = bench_cli.bench("zoo:tiny_cnn", threads=1, runs=2, warmup=1, progress=False,
                        against=["onnxruntime", "openvino"], rounds=3)  # fmt: skip
    p = r["peers"]
    assert set(p["latency_ms"]) == {"autofusion", "onnxruntime", "openvino"}
    assert all(len(v) == 3 and min(v) > 0 for v in p["rounds_ms"].values())
    assert p["match"] == {"autofusion": True, "onnxruntime": True, "openvino": True}
    assert p["max_abs_err"]["onnxruntime"] == 0.0  # the reference, run in another process
    for peer in ("onnxruntime", "openvino"):
        q = p["ratios"][peer]
        per_round = [a / b for a, b in zip(p["rounds_ms"]["autofusion"], p["rounds_ms"][peer])]
        assert q["min"] <= q["median"] <= q["max"]
        assert q["median"] == pytest.approx(float(np.median(per_round)), rel=1e-2)
    assert r["latency_ms"]["autofusion"] == p["latency_ms"]["autofusion"]
    assert r["ratio"] == pytest.approx(
        p["latency_ms"]["autofusion"] / p["latency_ms"]["onnxruntime"], rel=1e-3
    )
    # one thread: the same per-round ratios over process CPU time (the engine's own threads)
    assert set(p["cpu_ms"]) == {"autofusion", "onnxruntime", "openvino"}
    for peer in ("onnxruntime", "openvino"):
        q = p["cpu_ratios"][peer]
        cpu = [a / b for a, b in zip(p["cpu_rounds_ms"]["autofusion"], p["cpu_rounds_ms"][peer])]
        assert len(cpu) == 3
        assert q["min"] <= q["median"] <= q["max"]
        assert q["median"] == pytest.approx(float(np.median(cpu)), rel=1e-2)
    text = bench_cli.format_table(r)
    assert "ratio autofusion/openvino" in text
    assert "CPU ratio autofusion/openvino" in text
    assert "own process" in text


def test_against_with_two_threads_compares_wall_time_only() -> None:
    """CPU time sums the threads (and a spinning pool's idle turns): not a latency."""
    r = bench_cli.bench("zoo:tiny_cnn", threads=2, runs=1, warmup=1, progress=False,
                        against=["onnxruntime"], rounds=1)  # fmt: skip
    assert "cpu_ratios" not in r["peers"]
    assert set(r["peers"]["ratios"]) == {"onnxruntime"}
    assert "CPU ratio" not in bench_cli.format_table(r)


def test_against_reports_achieved_gflops_and_conv_gemm_share() -> None:
    """The achieved rate and the conv/GEMM share agree with the per-kernel profile that
    ``--profile`` lists (every kernel: tiny_cnn has fewer than 100) and with the latency."""
    r = bench_cli.bench("zoo:tiny_cnn", threads=1, runs=2, warmup=1, progress=False,
                        against=["onnxruntime"], rounds=1, profile=100)  # fmt: skip
    a = r["achieved"]
    rows = r["profile"]
    model = get_model("tiny_cnn")
    convs = {n.name or f"{n.op_type}_{i}" for i, n in enumerate(model.graph.node)
             if n.op_type in ("Conv", "MatMul", "Gemm")}  # fmt: skip
    assert convs
    conv_ms = sum(p["ms"] for p in rows if convs.intersection(p["origins"]))
    total_ms = sum(p["ms"] for p in rows)
    assert 0 < a["conv_gemm_share"] <= 1
    assert a["kernel_ms"] == pytest.approx(total_ms, rel=1e-2, abs=1e-3)
    assert a["conv_gemm_ms"] == pytest.approx(conv_ms, rel=1e-2, abs=1e-3)
    assert a["conv_gemm_share"] == pytest.approx(conv_ms / total_ms, rel=1e-2, abs=1e-3)
    flops = sum(p["flops"] * p["calls"] for p in rows) / 2  # per run of the 2 profiled
    assert a["model_flops"] == pytest.approx(flops, rel=1e-6)
    assert a["model_flops"] > 0
    ms = r["latency_ms"]["autofusion"]
    assert a["gflops_per_s"] == pytest.approx(a["model_flops"] / (ms * 1e-3) / 1e9, rel=1e-2)
    assert a["roof_gflops"] == pytest.approx(r["roofs"]["peak_gflops"], rel=1e-3)
    assert a["roof_fraction"] == pytest.approx(a["gflops_per_s"] / a["roof_gflops"], rel=1e-2)
    text = bench_cli.format_table(r)
    assert "GFLOP/s" in text
    assert f"{100 * a['conv_gemm_share']:.1f}% of kernel time" in text


def test_cli_against_prints_the_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["zoo:tiny_cnn", "--threads", "1", "--runs", "1", "--warmup", "1", "--rounds", "1"]
    assert bench_cli.main([*argv, "--against", "openvino", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["peers"]["ratios"]) == {"openvino"}
    assert result["ratio"] is None  # onnxruntime was not timed
    assert result["peers"]["match"]["openvino"] is True
    assert 0 <= result["achieved"]["conv_gemm_share"] <= 1
    assert result["achieved"]["model_flops"] > 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tensorrt", "unknown engine 'tensorrt'"),
        ("openvino,openvino", "listed twice"),
        (",", "comma-separated list"),
    ],
)
def test_bad_engine_lists_are_clear_errors(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_cli.main(["zoo:tiny_cnn", "--against", spec]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_against_needs_a_runnable_target() -> None:
    with pytest.raises(AutofusionError, match="--against needs --target c"):
        bench_cli.bench("zoo:tiny_cnn", target="ascendc", against=["onnxruntime"], progress=False)


def test_a_worker_that_cannot_load_its_engine_says_so(tmp_path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.zeros(2, np.float32))
    out = io.StringIO()
    code = peers.worker("onnxruntime", bad, None, feeds, tmp_path / "o.npz", 1, io.StringIO(), out)
    assert code == 1
    msg = json.loads(out.getvalue())
    assert "error" in msg
    assert not os.path.exists(tmp_path / "o.npz")


def test_cpu_ratios_come_from_cpu_time_and_wall_ratios_from_wall_time(
    tmp_path, monkeypatch
) -> None:
    """compare_engines with stand-in workers: ours waits (wall 4 ms) but computes 1 ms, the
    peer 2 ms of each; the wall ratio is 2, the CPU ratio 0.5, only with one thread."""
    times = {"autofusion": ([4e-3, 4e-3], [1e-3, 1e-3]), "openvino": ([2e-3], [2e-3])}

    class FakeWorker:
        def __init__(self, engine: str, args: list[str]) -> None:
            self.engine = engine
            np.savez(args[args.index("--out") + 1], y=np.zeros(1, np.float32))

        def receive(self) -> dict[str, object]:
            return {"ready": True}

        def time(self, warmup: int, runs: int) -> tuple[list[float], list[float]]:
            return times[self.engine]

        def close(self) -> None:
            pass

    monkeypatch.setattr(peers, "_Worker", FakeWorker)
    feeds = {"x": np.zeros(1, np.float32)}
    for threads in (1, 2):
        r = peers.compare_engines(tmp_path / "m.onnx", tmp_path, feeds, ["openvino"], threads,
                                  runs=2, warmup=0, rounds=3, work=tmp_path)  # fmt: skip
        assert r["ratios"]["openvino"] == {"median": 2.0, "min": 2.0, "max": 2.0}
        assert r["latency_ms"] == {"autofusion": 4.0, "openvino": 2.0}
        if threads == 1:
            assert r["cpu_ratios"]["openvino"] == {"median": 0.5, "min": 0.5, "max": 0.5}
            assert r["cpu_ms"] == {"autofusion": 1.0, "openvino": 2.0}
        else:
            assert "cpu_ratios" not in r
