"""Static checks of the repository itself (ruff lint, pyright types), run by the suite so
findings fail CI instead of piling up. The tools come with the ``test`` extra."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> list[str]:
    """The tool installed beside this interpreter (the ``test`` extra), else one on PATH."""
    exe = Path(sys.executable).with_name(name)
    found = str(exe) if exe.is_file() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return [found]


def test_ruff_check_clean() -> None:
    """`ruff check .` with the pyproject.toml config (E, F, I, UP, PT, RUF; 100 columns)."""
    proc = subprocess.run([*_tool("ruff"), "check", "--no-cache", "--output-format", "concise",
                           "."], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_clean() -> None:
    """`ruff format --check .`: the code is as the formatter writes it."""
    proc = subprocess.run(
        [*_tool("ruff"), "format", "--check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pyright_clean() -> None:
    """``pyright`` (basic mode, configured in pyproject.toml) reports no errors in autofusion/."""
    proc = subprocess.run(
        [*_tool("pyright"), "--pythonpath", sys.executable],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"pyright found problems:\n{proc.stdout}\n{proc.stderr}"
    assert "0 errors" in proc.stdout, proc.stdout
