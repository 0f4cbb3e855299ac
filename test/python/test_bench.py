"""autofusion-bench and autofusion-compile command lines: results, JSON contract, progress,
atomic output, and error paths (exit status 1, one line, no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from autofusion.errors import AutofusionError
from autofusion.tools import bench
from autofusion.tools import compile as compile_cli


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.getbasetemp() / "afcache-bench"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOFUSION_CACHE_DIR", str(d))
        yield d


def test_bench_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["zoo:tiny_cnn", "--threads", "1", "--runs", "3", "--warmup", "1", "--json"])
    captured = capsys.readouterr()
    assert rc == 0
    r = json.loads(captured.out)
    assert r["match"] is True
    assert 0 <= r["max_abs_err"] < 1e-3
    assert 0 <= r["max_rel_err"] < 1e-3
    assert set(r["latency_ms"]) == {"autofusion", "onnxruntime"}
    assert r["latency_ms"]["autofusion"] > 0
    assert r["ratio"] > 0
    assert r["report"]["kernels_after"] == r["kernels"]["autofusion"]
    assert r["kernels"]["onnxruntime"] > 0
    assert r["arena_bytes"] == r["report"]["arena_bytes"]
    assert "compiling libmodel.so" in captured.err  # progress while compiling


def test_bench_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["zoo:tiny_cnn", "--threads", "2", "--runs", "2", "--no-fusion"]) == 0
    out = capsys.readouterr().out
    assert "match" in out
    assert "yes" in out
    assert "ratio ours/ORT" in out
    assert "fusion off" in out


def test_bench_profile(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the roofs come from the environment here (measuring them is test_roofs.py's business)
    monkeypatch.setenv("AUTOFUSION_PEAK_GFLOPS", "100")
    monkeypatch.setenv("AUTOFUSION_DRAM_GBS", "10")
    argv = ["zoo:tiny_cnn", "--threads", "1", "--runs", "3", "--warmup", "1", "--profile", "3"]
    assert bench.main([*argv, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    prof = r["profile"]
    assert len(prof) == 3
    assert [p["ms"] for p in prof] == sorted((p["ms"] for p in prof), reverse=True)
    assert all(p["calls"] == 3 for p in prof)
    assert all(p["ms"] > 0 and p["share"] > 0 for p in prof)
    assert any(p["origins"] for p in prof)
    assert r["roofs"] == {"peak_gflops": 100.0, "dram_gbs": 10.0, "ridge_flops_per_byte": 10.0,
                          "threads": 1, "source": "environment"}  # fmt: skip
    work = r["report"]["kernel_work"]
    for p in prof:  # the compile-time counts, joined by kernel name, divided by the time
        assert (p["flops"], p["bytes"]) == (work[p["kernel"]]["flops"], work[p["kernel"]]["bytes"])
        seconds = p["ms"] * 3 / 1e3 / 3  # ms per run, one call per run
        assert p["gflops_per_s"] == pytest.approx(p["flops"] / seconds / 1e9, rel=0.02)
        assert p["gb_per_s"] == pytest.approx(p["bytes"] / seconds / 1e9, rel=0.02)
        assert p["flops_per_byte"] == pytest.approx(p["flops"] / p["bytes"], rel=1e-3)
        assert p["bound"] == ("compute" if p["flops"] / p["bytes"] >= 10 else "memory")
        attainable = min(100.0, 10.0 * p["flops"] / p["bytes"])
        assert p["roof_fraction"] == pytest.approx(p["gflops_per_s"] / attainable, rel=0.02)
    # tiny_cnn's 3x3 convs are above a ridge of 10 FLOP/B, its pools far below
    assert {p["bound"] for p in prof} <= {"compute", "memory"}
    assert prof[0]["bound"] == "compute"
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "slowest kernels" in out
    assert "roofs: sgemm 100.0 GFLOP/s (1 thread(s)), copy 10.0 GB/s, ridge 10.0 FLOP/B" in out
    assert "GFLOP/s" in out
    assert "bound" in out
    assert prof[0]["kernel"].split("_")[0] in out
    assert bench.main(["zoo:tiny_cnn", "--target", "ascendc", "--profile", "2"]) == 1
    assert "--profile needs --target c" in capsys.readouterr().err


def test_compare_flags_mismatch() -> None:
    ref = {"y": np.array([1.0, 2.0], np.float32), "i": np.array([1, 2])}
    assert bench.compare(dict(ref), ref)["match"] is True
    bad = bench.compare({"y": np.array([1.0, 2.1], np.float32), "i": ref["i"]}, ref)
    assert bad["match"] is False
    assert bad["outputs"]["y"]["match"] is False
    assert abs(bad["max_abs_err"] - 0.1) < 1e-6
    assert bench.compare({"y": ref["y"], "i": np.array([1, 3])}, ref)["match"] is False
    assert bench.compare({"y": ref["y"]}, ref)["outputs"]["i"]["error"] == "missing output"


def test_compile_cli_writes_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, rep = tmp_path / "out" / "tiny", tmp_path / "rep.json"
    assert compile_cli.main(["zoo:tiny_cnn", "-o", str(out), "--report", str(rep)]) == 0
    for name in ("model.c", "model.h", "weights.bin", "Makefile", "libmodel.so", "afrt.h"):
        assert (out / name).is_file(), name
    report = json.loads(rep.read_text())
    assert report["kernels_after"] > 0
    assert "groups" in report
    assert "wrote" in capsys.readouterr().err
    # rebuilding into the same directory replaces it
    assert compile_cli.main(["zoo:tiny_cnn", "-o", str(out), "--no-fusion"]) == 0
    assert json.loads((out / "report.json").read_text())["fusion"] is False


def test_compile_failure_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from autofusion.lowering.c.backend import CBackend

    def broken_emit(self: CBackend, module: object, out_dir: Path) -> None:
        (out_dir / "model.c").write_text("half")
        raise AutofusionError("emitter exploded")

    monkeypatch.setattr(CBackend, "emit", broken_emit)
    out = tmp_path / "out"
    assert (
        compile_cli.main(["zoo:tiny_cnn", "-o", str(out), "--report", str(tmp_path / "r.json")])
        == 1
    )
    assert "emitter exploded" in capsys.readouterr().err
    assert not out.exists()
    assert not (tmp_path / "r.json").exists()
    staging = Path(os.environ["AUTOFUSION_CACHE_DIR"]) / "tmp"
    assert not any(staging.iterdir())


@pytest.mark.parametrize(
    ("tool", "argv", "message"),
    [
        ("compile", ["missing.onnx", "-o", "OUT"], "missing.onnx: no such file"),
        ("compile", ["zoo:tiny_cnn"], "required: -o/--output"),
        ("compile", ["zoo:tiny_cnn", "-o", "OUT", "--bogus"], "unrecognized arguments: --bogus"),
        ("compile", ["zoo:tiny_cnn", "-o", "OUT", "--threads", "0"], "positive integer"),
        ("compile", ["zoo:tiny_cnn", "-o", "OUT", "--memory-limit", "x"], "positive number"),
        ("compile", ["zoo:tiny_cnn", "-o", "OUT", "--target", "gpu"], "invalid choice: 'gpu'"),
        ("compile", ["zoo:tiny_cnn", "-o", "OUT", "--config", "nope.yaml"], "nope.yaml: no such"),
        ("bench", ["missing.onnx"], "missing.onnx: no such file"),
        ("bench", ["zoo:tiny_cnn", "--runs", "0"], "positive integer"),
        ("bench", ["zoo:unknown_model"], "unknown zoo model"),
    ],
)
def test_cli_errors(tool: str, argv: list[str], message: str, tmp_path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    argv = [str(tmp_path / "OUT") if a == "OUT" else a for a in argv]
    main = compile_cli.main if tool == "compile" else bench.main
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse usage errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 1
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "OUT").exists()


def test_console_script_exit_status(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("autofusion-compile")
    proc = subprocess.run([str(exe), str(tmp_path / "none.onnx"), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("autofusion-compile: error:")
    assert "Traceback" not in proc.stderr


def test_compile_cli_memory_plot_and_ascendc(tmp_path: Path) -> None:
    plot = tmp_path / "plan.svg"
    assert (
        compile_cli.main(["zoo:tiny_cnn", "-o", str(tmp_path / "c"), "--memory-plot", str(plot)])
        == 0
    )
    assert plot.read_text().lstrip().startswith("<svg") or "<svg" in plot.read_text()
    assert compile_cli.main(["zoo:tiny_cnn", "-o", str(tmp_path / "a"), "--target", "ascendc"]) == 0
    assert (tmp_path / "a" / "CMakeLists.txt").is_file()
    assert not (tmp_path / "a" / "libmodel.so").exists()


def test_bench_ascendc_on_the_cpu_model(capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["zoo:tiny_cnn", "--target", "ascendc", "--threads", "1", "--runs", "1",
                     "--warmup", "1", "--json"])  # fmt: skip
    r = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert r["match"] is True
    assert r["target"] == "ascendc"
    assert "says nothing about an NPU" in r["latency_note"]
