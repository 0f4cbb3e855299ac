"""Compile time of ``autofusion-compile`` for a set of models, for one or more source trees.

Issue 14 asks that compile time not regress by more than 20%; this measures it. Each
compile runs ``python -m autofusion.tools.compile MODEL -o DIR --threads 1`` in its own
process with ``PYTHONPATH`` set to a tree (so an older checkout, e.g. a ``git worktree`` of
the commit before a change, can be compared with this one), a fresh compile cache (a model
build is never a cache hit) and, per tree, one runtime folder (``AUTOFUSION_RUNTIME_DIR``):
``--runtime warm`` compiles a small model first, untimed, so the runtime cache holds this
machine's runtime, as after the install command; ``cold`` gives each compile an empty one;
``off`` sets ``AUTOFUSION_RUNTIME_CACHE=0`` (kernels compiled into each ``model.c``). A tree
that predates the runtime cache ignores both variables.

Reported per model and tree: the median CPU time (user + sys of the compile process and its
children: robust to other work on the machine, unlike wall time, also reported) and the
ratio to the first tree. Trees and models are interleaved, their order rotating per round.

    .venv/bin/python benchmarks/compile_time.py --models zoo:resnet50,zoo:bert_base \\
        --trees base=/work/wt/base,main=. --rounds 2 [--runtime warm|cold|off] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM_MODEL = "zoo:tiny_cnn"


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _compile(tree: Path, model: str, env_extra: dict[str, str]) -> tuple[float, float, str]:
    """(CPU s, wall s, error or '') of one compile of ``model`` with ``tree``'s autofusion."""
    scratch = Path(tempfile.mkdtemp(prefix="af-ctime-"))
    env = {**os.environ, "PYTHONPATH": str(tree), "AUTOFUSION_CACHE_DIR": str(scratch / "cache"),
           **env_extra}  # fmt: skip
    cmd = [sys.executable, "-m", "autofusion.tools.compile", model, "-o", str(scratch / "out"),
           "--threads", "1"]  # fmt: skip
    try:
        before, t0 = _cpu_children(), time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, _cpu_children() - before
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lines = proc.stderr.strip().splitlines()
    return cpu, wall, "" if proc.returncode == 0 else (lines[-1] if lines else "failed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", required=True, help="comma-separated zoo:NAME or .onnx paths")
    ap.add_argument("--trees", default=f"this={Path(__file__).resolve().parent.parent}",
                    help="comma-separated NAME=PATH source trees (default: this one)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runtime", choices=("warm", "cold", "off"), default="warm")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    trees: dict[str, Path] = {}
    for item in args.trees.split(","):
        name, sep, path = item.partition("=")
        if not sep or not Path(path).is_dir():
            ap.error(f"--trees: expected NAME=DIR with an existing DIR, got {item!r}")
        trees[name] = Path(path).resolve()
    runtime_dirs = {name: Path(tempfile.mkdtemp(prefix=f"af-ctime-rt-{name}-")) for name in trees}
    try:

        def env_for(name: str) -> dict[str, str]:
            if args.runtime == "off":
                return {"AUTOFUSION_RUNTIME_CACHE": "0"}
            if args.runtime == "cold":
                shutil.rmtree(runtime_dirs[name], ignore_errors=True)
            return {"AUTOFUSION_RUNTIME_DIR": str(runtime_dirs[name])}

        if args.runtime == "warm":
            for name, tree in trees.items():
                print(f"warming {name}'s runtime cache with {WARM_MODEL}", file=sys.stderr)
                _compile(tree, WARM_MODEL, env_for(name))
        cpu: dict[tuple[str, str], list[float]] = {}
        wall: dict[tuple[str, str], list[float]] = {}
        errors: dict[tuple[str, str], str] = {}
        names = list(trees)
        for r in range(args.rounds):
            for model in models:
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    c, w, err = _compile(trees[name], model, env_for(name))
                    print(f"round {r}: {model} {name}: cpu {c:.1f} s, wall {w:.1f} s"
                          + (f" FAILED: {err}" if err else ""), file=sys.stderr)  # fmt: skip
                    if err:
                        errors[(model, name)] = err
                    else:
                        cpu.setdefault((model, name), []).append(c)
                        wall.setdefault((model, name), []).append(w)
    finally:
        for d in runtime_dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    first = names[0]
    head = " | ".join(f"{n} CPU s | {n} wall s" + (f" | {n}/{first}" if n != first else "")
                      for n in names)  # fmt: skip
    print(f"| model | {head} |")
    print("|---" * (1 + 2 * len(names) + len(names) - 1) + "|")
    table = []
    for model in models:
        row: dict[str, object] = {"model": model}
        cells = []
        for name in names:
            if (model, name) in errors:
                cells += ["failed", "-"] + (["-"] if name != first else [])
                row[name] = {"error": errors[(model, name)]}
                continue
            c = statistics.median(cpu[(model, name)])
            w = statistics.median(wall[(model, name)])
            row[name] = {"cpu_s": round(c, 2), "wall_s": round(w, 2)}
            cells += [f"{c:.1f}", f"{w:.1f}"]
            if name != first:
                base = cpu.get((model, first))
                ratio = c / statistics.median(base) if base else None
                cells.append(f"{ratio:.2f}" if ratio else "-")
                row[f"{name}/{first}"] = round(ratio, 3) if ratio else None
        table.append(row)
        print(f"| {model} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps({"runtime": args.runtime, "rows": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
