"""benchmarks/kernel_ab.py: which kernels ``--match`` selects, and a selection that is empty
is one message before anything is timed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kernel_ab


def test_match_takes_the_name_or_the_conv_algorithm() -> None:
    names = {"k1_conv_relu", "k3_conv_relu", "op5_add"}
    algos = {"k1_conv_relu": "direct_smallc C3 K16", "k3_conv_relu": "winograd C16 K16"}
    assert kernel_ab.matching(names, algos, "") == names
    assert kernel_ab.matching(names, algos, "winograd") == {"k3_conv_relu"}
    assert kernel_ab.matching(names, algos, "conv") == {"k1_conv_relu", "k3_conv_relu"}
    assert kernel_ab.matching(names, algos, "gemm") == set()


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kab") / "tiny"
    exe = Path(sys.executable).with_name("autofusion-compile")
    subprocess.run([str(exe), "zoo:tiny_cnn", "-o", str(out)], check=True, capture_output=True)
    return out


def test_no_matching_kernel_is_one_message(
    tiny_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kernel_ab.main([str(tiny_build), str(tiny_build), "--match", "no_such_kernel"]) == 1
    cap = capsys.readouterr()
    assert "has 'no_such_kernel' in its name or conv algorithm" in cap.err
    assert "Traceback" not in cap.err
    assert "| kernel |" not in cap.out  # nothing timed


def test_match_by_algorithm_lists_only_those_kernels(
    tiny_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tiny_build), str(tiny_build), "--match", "winograd", "--rounds", "2", "--runs", "1"]
    assert kernel_ab.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [r for r in out if r.startswith("| k") and " ms " not in r]  # not the header
    assert rows
    assert all("winograd" in r for r in rows)
