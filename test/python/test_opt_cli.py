"""autofusion-opt as a user runs it: good input works, bad input gives one clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OPT = [sys.executable, "-m", "autofusion.tools.opt"]

GOOD = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(OPT + args, input=stdin, capture_output=True, text=True)


def test_roundtrip_from_stdin() -> None:
    proc = _run([], GOOD)
    assert proc.returncode == 0, proc.stderr
    assert "nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>" in proc.stdout


def test_bad_ir_text_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(GOOD.replace("nn.relu %x :", "nn.relu %x, :"))
    proc = _run([str(bad)])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error" in proc.stderr


def test_verifier_error_names_the_op(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
        "  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        "  func.return %y : tensor<3x2xf32>\n}\n"
    )
    proc = _run([str(bad)])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "'nn.relu'" in proc.stderr
    assert str(bad) in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_file() -> None:
    proc = _run(["/nonexistent/model.mlir"])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "/nonexistent/model.mlir" in proc.stderr
