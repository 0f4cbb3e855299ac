"""Run the lit/FileCheck suite from pytest, and lint its RUN lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIT_DIR = ROOT / "test" / "filecheck"


def _lit_files() -> list[Path]:
    return sorted(
        p
        for p in LIT_DIR.rglob("*")
        if p.suffix in (".mlir", ".test") and "Output" not in p.parts and "inputs" not in p.parts
    )


def _run_lines(path: Path) -> list[str]:
    """RUN commands, with backslash continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        m = re.search(r"RUN:\s?(.*)$", raw)
        if not m:
            continue
        part = m.group(1).rstrip()
        if part.endswith("\\"):
            pending += part[:-1] + " "
            continue
        lines.append(pending + part)
        pending = ""
    return lines


def test_every_run_line_reaches_filecheck() -> None:
    bad = []
    files = _lit_files()
    assert files, "no lit tests found"
    for path in files:
        runs = _run_lines(path)
        if not runs:
            bad.append(f"{path.relative_to(ROOT)}: no RUN line")
        for run in runs:
            if not re.search(r"\|\s*filecheck\s+%s", run):
                bad.append(
                    f"{path.relative_to(ROOT)}: RUN line does not pipe into filecheck: {run}"
                )
            if "--verify-diagnostics" in run and "not " in run.split("|")[0]:
                bad.append(f"{path.relative_to(ROOT)}: --verify-diagnostics exits 0; drop 'not'")
        text = path.read_text()
        if not re.search(r"CHECK", text.replace("RUN:", "")):
            bad.append(f"{path.relative_to(ROOT)}: no CHECK lines")
    assert not bad, "\n".join(bad)


# The suite runs as SHARDS tests of one lit shard each (lit --num-shards/--run-shard: every
# test in exactly one shard), one process each: as one test it was CI's longest (~200 s under
# load) and kept one pytest worker busy while the other ran out of work.
SHARDS = 4


@pytest.mark.parametrize("shard", range(1, SHARDS + 1))
def test_lit_suite(shard: int) -> None:
    lit = shutil.which("lit") or str(Path(sys.executable).parent / "lit")
    if not os.path.exists(lit):
        pytest.fail("lit is not installed (pip install -e '.[test]')")
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    cmd = [lit, "-q", "-j1", f"--num-shards={SHARDS}", f"--run-shard={shard}", str(LIT_DIR)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-5000:]
