"""Shared assertions of the hostile-input suite (``test_hostile_*.py``).

Every hostile case must end the same way: exit status 1 (or ``AutofusionError`` from Python),
one clear line naming what is wrong, no traceback, no "internal error", nothing half-written.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

TOOLS = {
    "opt": "autofusion.tools.opt",
    "compile": "autofusion.tools.compile",
    "bench": "autofusion.tools.bench",
}


def run_tool(
    tool: str, args: Sequence[str], stdin: str | bytes | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[bytes]:
    """Run ``autofusion-<tool>`` as a user would (a fresh process)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", TOOLS[tool], *args], input=data, capture_output=True, timeout=timeout
    )


def assert_clean_cli_error(proc: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """Exit 1, one ``error:`` line on stderr holding every needle, no traceback. Returns it."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, f"exit {proc.returncode}, stderr:\n{err}"
    assert "Traceback" not in err, err
    assert "internal error" not in err, err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1, f"expected one error line, got:\n{err}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def assert_clean_api_error(excinfo: pytest.ExceptionInfo[BaseException], *needles: str) -> str:
    """An ``AutofusionError`` whose message is one line holding every needle. Returns it."""
    from autofusion.errors import AutofusionError

    assert isinstance(excinfo.value, AutofusionError), repr(excinfo.value)
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    assert "internal error" not in msg, msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    return msg


def assert_nothing_written(out_dir: Path) -> None:
    """A failed command leaves no output folder and no staging leftovers beside it."""
    assert not out_dir.exists(), f"{out_dir} was written: {sorted(out_dir.rglob('*'))}"
    parent = out_dir.parent
    leftovers = [p.name for p in parent.iterdir() if p.name.startswith(f".{out_dir.name}")]
    assert not leftovers, f"staging leftovers beside {out_dir}: {leftovers}"
