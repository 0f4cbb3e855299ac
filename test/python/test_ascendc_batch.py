"""Run-time batch on the Ascend C target (docs/ascendc.md, "Run-time batch"): a
batch-separable model compiled with ``--target ascendc --dynamic batch=LO..HI`` is one
project whose ``af_run_model_batch`` runs the kernels once per sample; checked on the CPU
functional model against onnxruntime at several batches, through the Python runner and
through the generated ``host/main.cpp``; out-of-range and disagreeing batches are clear
errors, and a graph that mixes samples is refused with its node named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from autofusion.api import open_model, pin_batch, prepare_module
from autofusion.dialects.attrs import C_BATCH
from autofusion.errors import AutofusionError
from autofusion.frontend.batch import attribute_value
from autofusion.frontend.symbols import parse_range_specs
from autofusion.lowering.ascendc.cpu_run import CpuModelRunner, build_cpu_library
from autofusion.pipeline import Pipeline, PipelineOptions
from autofusion.testing import assert_close

DATA = Path(__file__).parent / "data" / "exported"
MODEL = DATA / "resnet_tsdyn.onnx"  # input[batch, 3, 32, 32] -> logits[batch, 10]


def _ort(feeds: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _x(batch: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, 32, 32)).astype(np.float32)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> CpuModelRunner:
    source = pin_batch(open_model(str(MODEL), dynamic=parse_range_specs(["batch=1..8"])))
    assert source.batch is not None
    opts = PipelineOptions(target="ascendc")
    pipeline = Pipeline.from_options(opts)
    module, _ = prepare_module(source, opts, str(MODEL), pipeline=pipeline)
    module.attributes[C_BATCH] = attribute_value(source.batch)
    pipeline.lowering().run(module)
    return CpuModelRunner(module, tmp_path_factory.mktemp("acb"))


@pytest.mark.parametrize("batch", [1, 2, 8, 3])
def test_one_project_matches_onnxruntime_at_every_batch(runner: CpuModelRunner, batch: int):
    x = _x(batch, batch)
    got = runner.run_host_program({"input": x})["logits"]
    ref = _ort({"input": x})
    assert got.shape == (batch, 10)
    assert 0.1 < float(np.abs(ref).max()) < 10
    assert_close(got, ref, f"ascendc resnet at batch {batch}")
    # every sample is its own: sample i equals the batch-1 run of that sample
    one = runner.run_host_program({"input": x[-1:]})["logits"]
    assert_close(got[-1:], one, "last sample alone")


def test_manifest_and_host_program_name_the_batch(runner: CpuModelRunner) -> None:
    manifest = json.loads((runner.project / "manifest.json").read_text())
    assert manifest["batch"] == {
        "symbol": "batch",
        "range": [1, 8],
        "batched_inputs": ["input"],
        "batched_outputs": ["logits"],
    }
    assert manifest["inputs"] == [{"name": "input", "shape": [1, 3, 32, 32]}]
    host = (runner.project / "host" / "model.cpp").read_text()
    assert 'extern "C" int64_t af_batch_max(void) { return 8; }' in host
    assert "return af_run_model_batch(weights, 1, inputs, outputs);" in host


def test_disagreeing_or_out_of_range_batches_are_clear_errors(runner: CpuModelRunner) -> None:
    with pytest.raises(AutofusionError, match=r"af_run_model_batch failed"):
        runner.run_host_program({"input": _x(9, 0)})
    with pytest.raises(AutofusionError, match=r"input 'input' has shape \[2, 3, 32, 31\]"):
        runner.run_host_program({"input": np.zeros((2, 3, 32, 31), np.float32)})


def test_cli_project_main_takes_a_batch(tmp_path: Path) -> None:
    """autofusion-compile --target ascendc --dynamic batch=1..4 writes one project; its
    host/main.cpp, built against the CPU model, runs batch 3 from files and refuses 5."""
    out = tmp_path / "proj"
    cmd = [sys.executable, "-m", "autofusion.tools.compile", str(MODEL), "--target", "ascendc",
           "--dynamic", "batch=1..4", "-o", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "run-time batch: 'batch' 1..4 in one project (af_run_model_batch)" in proc.stderr
    lib = build_cpu_library(out)
    exe = tmp_path / "model"
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    main_cpp = out / "host" / "main.cpp"
    subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", str(main_cpp), str(lib),
                    f"-Wl,-rpath,{lib.parent}", "-o", str(exe)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    x = _x(3, 7)
    x.tofile(tmp_path / "x.bin")
    run = [str(exe), "--batch", "3", str(out / "weights.bin"), str(tmp_path / "x.bin"),
           str(tmp_path / "y.bin")]  # fmt: skip
    proc = subprocess.run(run, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    got = np.fromfile(tmp_path / "y.bin", np.float32).reshape(3, 10)
    assert_close(got, _ort({"input": x}), "host program at batch 3")
    run[2] = "5"
    proc = subprocess.run(run, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "--batch 5: expected an integer in 1..4" in proc.stderr
    run[1:3] = []  # no --batch: one sample, and the file of three is the wrong size
    proc = subprocess.run(run, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "expected 12288 bytes" in proc.stderr


def test_cli_refuses_a_graph_that_mixes_samples(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    node = helper.make_node("Softmax", ["x"], ["y"], axis=0, name="sm")
    graph = helper.make_graph([node], "g", [x], [y])
    path = tmp_path / "mix.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "proj"
    cmd = [sys.executable, "-m", "autofusion.tools.compile", str(path), "--target", "ascendc",
           "--dynamic", "n=1..4", "-o", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "node 'sm' (nn.softmax): nn.softmax runs along dim 0, the batch" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
