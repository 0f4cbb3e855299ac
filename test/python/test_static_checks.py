"""Static checks that are part of the test suite, so they cannot silently rot."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyright() -> list[str]:
    """The pyright of this environment (a test dependency), found next to the interpreter."""
    exe = Path(sys.executable).with_name("pyright")
    found = str(exe) if exe.exists() else shutil.which("pyright")
    assert found, "pyright is not installed: pip install -e '.[test]'"
    return [found]


def test_pyright_clean() -> None:
    """``pyright`` (basic mode, configured in pyproject.toml) reports no errors in autofusion/."""
    proc = subprocess.run(
        [*_pyright(), "--pythonpath", sys.executable],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, f"pyright found problems:\n{proc.stdout}\n{proc.stderr}"
    assert "0 errors" in proc.stdout, proc.stdout
