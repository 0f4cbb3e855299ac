"""Windowed fusion analysis from the config (``analysis_window``), the API and the CLIs
(``--analysis-window``): each changes the partition the same way ``fuse{window_size=N}``
does, and an explicit option wins over the config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autofusion import zoo
from autofusion.api import prepare_module
from autofusion.errors import AutofusionError
from autofusion.pipeline import Pipeline, PipelineOptions
from autofusion.policy import config_from_dict

MODEL = "tiny_bert"  # 107 top-level ops; windows of 8 split many of its kernels


def groups(opts: PipelineOptions) -> list[list[str]]:
    _, report = prepare_module(zoo.get_model(MODEL), opts, MODEL)
    return [g["origins"] for g in report["groups"]]


def write(tmp: Path, data: object) -> str:
    p = tmp / "cfg.json"
    p.write_text(json.dumps(data))
    return str(p)


def test_config_key_validated() -> None:
    assert config_from_dict({"analysis_window": 64}).analysis_window == 64
    assert config_from_dict({}).analysis_window == 0
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(AutofusionError, match="'analysis_window' must be an integer >= 0"):
            config_from_dict({"analysis_window": bad}, "c.json")


def test_window_from_config_option_and_precedence(tmp_path: Path) -> None:
    whole = groups(PipelineOptions())
    windowed = groups(PipelineOptions(analysis_window=8))
    assert windowed != whole
    # kernels split at window edges: fewer ops end up fused
    assert sum(map(len, windowed)) < sum(map(len, whole))
    cfg = write(tmp_path, {"analysis_window": 8})
    assert groups(PipelineOptions(config=cfg)) == windowed
    # an explicit 0 (whole graph) wins over the config's window
    assert groups(PipelineOptions(config=cfg, analysis_window=0)) == whole
    # large windows reproduce the whole-graph result on this model
    assert groups(PipelineOptions(analysis_window=128)) == whole


def test_pipeline_string_carries_the_window() -> None:
    text = Pipeline.from_options(PipelineOptions(analysis_window=8)).pipeline_string()
    assert "fuse{window_size=8}" in text
    assert "window_size" not in Pipeline.from_options(PipelineOptions()).pipeline_string()


def test_compile_cli_flag(tmp_path: Path) -> None:
    from autofusion.tools.compile import main

    reports = []
    for extra in ([], ["--analysis-window", "8"]):
        out, rep = tmp_path / f"out{len(extra)}", tmp_path / f"r{len(extra)}.json"
        argv = [f"zoo:{MODEL}", "-o", str(out), "--target", "ascendc", "--report", str(rep)]
        assert main([*argv, *extra]) == 0
        reports.append(json.loads(rep.read_text()))
    assert [g["origins"] for g in reports[1]["groups"]] == groups(
        PipelineOptions(analysis_window=8)
    )
    assert [g["origins"] for g in reports[0]["groups"]] == groups(PipelineOptions())


def test_cli_rejects_bad_values() -> None:
    for tool, args in (
        ("compile", [f"zoo:{MODEL}", "-o", "/tmp/unused-af", "--analysis-window", "-2"]),
        ("opt", ["--analysis-window", "4"]),  # needs --compile-pipeline
    ):
        proc = subprocess.run([sys.executable, "-m", f"autofusion.tools.{tool}", *args],
                              input="", capture_output=True, text=True)  # fmt: skip
        assert proc.returncode in (1, 2), proc.stderr
        assert "analysis-window" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_opt_compile_pipeline_flag() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "autofusion.tools.opt", "--compile-pipeline", "--print-pipeline",
         "--analysis-window", "16"],
        input="func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %y = nn.relu %x : (tensor<2xf32>) -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n",
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "fuse{window_size=16}" in proc.stderr
