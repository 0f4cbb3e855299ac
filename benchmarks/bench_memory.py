"""Resident memory of a compiled model: what loading it and one run add to a process.

Compiles ``zoo:NAME`` (optionally with a config, e.g. ``precision: {bf16_ops: [...]}``) into a
temporary folder, then in a fresh child process reads ``VmRSS`` before ``af_create``, after it
(the weights blob) and after the first run (plus the packed GEMM copies of the weights, the
arena and the scratch); prints the deltas in MB and weights.bin's size::

    python benchmarks/bench_memory.py resnet50
    python benchmarks/bench_memory.py resnet50 --config bf16.yaml
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _child(directory: str, model: str) -> None:
    from autofusion import zoo
    from autofusion.runtime.loader import ModelLibrary

    feeds = zoo.sample_inputs(zoo.get_model(model))
    d = Path(directory)
    base = _rss_kb()
    lib = ModelLibrary(d / "libmodel.so", d / "weights.bin", num_threads=1)
    loaded = _rss_kb()
    lib.run(feeds)
    ran = _rss_kb()
    print(json.dumps({"load_mb": (loaded - base) / 1024, "run_mb": (ran - base) / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="zoo model name")
    ap.add_argument("--config", help="fusion config (JSON or YAML)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.model)
        return
    from autofusion import zoo
    from autofusion.api import build_model_dir
    from autofusion.pipeline import PipelineOptions

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m"
        build_model_dir(zoo.get_model(args.model), out, PipelineOptions(config=args.config))
        res = subprocess.run(
            [sys.executable, __file__, args.model, "--child", str(out)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["weights_bin_mb"] = (out / "weights.bin").stat().st_size / 2**20
    label = f"{args.model} ({args.config or 'fp32'})"
    print(
        f"{label}: weights.bin {row['weights_bin_mb']:.1f} MB, RSS +{row['load_mb']:.1f} MB "
        f"after af_create, +{row['run_mb']:.1f} MB after the first run"
    )


if __name__ == "__main__":
    main()
