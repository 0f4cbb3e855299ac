"""CONTRIBUTING.md's "How to add a rewrite pattern", followed literally in a scratch copy.

The repository's tracked files are copied, each code block of that section is applied exactly
as its first line says (a new file, or lines inserted after a named line), and the commands of
its last step run against the copy; then the new pass must reach ``autofusion.compile()``.
A how-to that needs an edit it does not mention fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "CONTRIBUTING.md").read_text()

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
NEW_FILE = re.compile(r"^(?:#|//|<!--) (?P<path>\S+): new file(?: -->)?$")
INSERT = re.compile(
    r"^(?:#|//|<!--) (?P<path>\S+): after the line starting with: (?P<anchor>.+?)(?: -->)?$"
)


def _section(title: str) -> str:
    start = GUIDE.index(f"## {title}\n")
    end = GUIDE.find("\n## ", start + 1)
    return GUIDE[start : end if end >= 0 else len(GUIDE)]


def _tracked_files() -> list[str]:
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
        if out.returncode == 0:
            return [f for f in out.stdout.splitlines() if (ROOT / f).is_file()]
    skip = {".venv", ".git", "out", "__pycache__", ".pytest_cache"}
    return [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
    ]


def _apply(scratch: Path, body: str) -> str:
    """Apply one instruction block; returns the path it touched."""
    head, _, text = body.partition("\n")
    if m := NEW_FILE.match(head):
        target = scratch / m["path"]
        assert not target.exists(), f"{m['path']} already exists"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return m["path"]
    m = INSERT.match(head)
    assert m, f"block does not say where it goes: {head!r}"
    target = scratch / m["path"]
    lines = target.read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip().startswith(m["anchor"])]
    assert len(hits) == 1, f"{m['path']}: {len(hits)} lines start with {m['anchor']!r}"
    lines[hits[0] + 1 : hits[0] + 1] = [text]
    target.write_text("".join(lines))
    return m["path"]


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{shlex.join(cmd)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


@pytest.mark.slow
def test_add_a_pattern_howto_works_as_written(tmp_path: Path) -> None:
    scratch = tmp_path / "repo"
    for rel in _tracked_files():
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, scratch / rel)

    section = _section("How to add a rewrite pattern")
    blocks = BLOCK.findall(section)
    touched = [_apply(scratch, body) for lang, body in blocks if lang != "sh"]
    assert "autofusion/passes/cancel_double_neg.py" in touched
    assert len(touched) == 5, touched

    bindir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PYTHONPATH": str(scratch),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    (commands,) = [body for lang, body in blocks if lang == "sh"]
    for line in commands.splitlines():
        cmd = shlex.split(line)
        if cmd[0] == ".venv/bin/python":
            cmd = [sys.executable, *cmd[1:], "-p", "no:cacheprovider", "-n", "0"]
        elif cmd[0] == "lit":
            cmd = [str(bindir / "lit"), *cmd[1:]]
        _run(cmd, scratch, env)

    # The pass reaches compile(): the copy's autofusion (not this checkout's) runs it.
    probe = """
import numpy as np, onnx, autofusion
from onnx import TensorProto, helper
from autofusion.pipeline import Pipeline, PipelineOptions
assert autofusion.__file__.startswith(SCRATCH), autofusion.__file__
assert "cancel-double-neg" in Pipeline.from_options(PipelineOptions()).names
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
nodes = [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
         helper.make_node("Relu", ["b"], ["y"])]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
m = autofusion.compile(model)
v = np.random.default_rng(0).uniform(-2, 2, (2, 8)).astype(np.float32)
np.testing.assert_allclose(m.run({"x": v})["y"], np.maximum(v, 0), rtol=1e-6)
print("ok")
""".replace("SCRATCH", repr(str(scratch)))
    _run([sys.executable, "-c", probe], tmp_path, env)
