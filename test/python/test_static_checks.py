"""Static checks of the repository itself, so lint findings fail the suite instead of piling up."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ruff() -> list[str]:
    """The ruff of this environment (the `test` extra installs it), as a command prefix."""
    exe = Path(sys.executable).with_name("ruff")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("ruff")
    assert found, "ruff is not installed: pip install -e '.[test]'"
    return [found]


def test_ruff_check_clean() -> None:
    """`ruff check .` with the pyproject.toml config (E, F, I, UP, PT, RUF; 100 columns) finds
    nothing; the formatter is not part of this check."""
    proc = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
