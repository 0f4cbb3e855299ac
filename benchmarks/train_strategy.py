"""Train the learned strategy's kernel-time model on this machine's profiles.

    python benchmarks/train_strategy.py                 # profile, write the CSV, fit, write JSON
    python benchmarks/train_strategy.py --from-csv      # refit from the committed CSV only

Training data: every kernel of the zoo builds below (one thread), at three fusion settings
(``--no-fusion``, aggressiveness 1 and 2), profiled with ``CompiledModel.profile`` (its
fastest of 5 rounds: the machine is shared) and described by the features of
``autofusion.policy.learned.FEATURES``, computed from the same tensor pipeline's module.
The rows go to ``benchmarks/data/strategy_train.csv``; the fit (non-negative least squares
on relative error) to ``autofusion/policy/strategy_model.json``, with its leave-one-model-out
rank correlation and median relative error next to the roofline's.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cost_validation import spearman

MODELS = ("tiny_cnn", "tiny_bert", "mobilenet", "vit_tiny", "resnet50")
SETTINGS = ("nofusion", "level1", "level2")
CSV = Path("benchmarks/data/strategy_train.csv")
COMMAND = "python benchmarks/train_strategy.py"


def gather(models: Sequence[str], runs: int, rounds: int = 5) -> list[dict[str, Any]]:
    import autofusion
    from autofusion import zoo
    from autofusion.analysis.hardware import cpu_this_machine
    from autofusion.analysis.predict import Roofs, group_work
    from autofusion.api import prepare_module
    from autofusion.dialects.fusion import KernelOp
    from autofusion.pipeline import PipelineOptions
    from autofusion.policy.learned import FEATURES, buffers_of, features
    from autofusion.policy.reasons import origins_of

    hw = cpu_this_machine()
    roofs = Roofs.of(hw)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        level2 = Path(tmp) / "level2.json"
        level2.write_text(json.dumps({"aggressiveness": 2}))
        for name in models:
            proto = zoo.get_model(name)
            feeds = zoo.sample_inputs(proto, 0)
            for setting in SETTINGS:
                fusion = setting != "nofusion"
                config = str(level2) if setting == "level2" else None
                print(f"profiling {name} ({setting}) ...", file=sys.stderr, flush=True)
                module, _ = prepare_module(proto, PipelineOptions(fusion=fusion, config=config))
                by_origins: dict[tuple[str, ...], Any] = {}
                for f in module.ops:
                    for op in f.regions[0].block.ops if f.regions else []:
                        if isinstance(op, KernelOp) or (
                            op.name.startswith("nn.") and op.name != "nn.constant"
                        ):
                            by_origins.setdefault(tuple(origins_of(op)), op)
                m = autofusion.compile(f"zoo:{name}", threads=1, fusion=fusion, config=config)
                m.run(feeds)
                best: dict[str, Any] = {}
                for _ in range(rounds):
                    for k in m.profile(feeds, runs=max(1, runs // rounds)):
                        old = best.get(k.kernel)
                        if k.calls and (
                            old is None or k.seconds / k.calls < old.seconds / old.calls
                        ):
                            best[k.kernel] = k
                m.close()
                for k in best.values():
                    op = by_origins.get(tuple(k.origins))
                    if op is None:
                        continue
                    ops = list(op.body.block.ops) if isinstance(op, KernelOp) else [op]
                    work = group_work(ops, hw, roofs.vector_lanes)
                    row: dict[str, Any] = {
                        "model": name,
                        "setting": setting,
                        "kernel": k.kernel,
                        "ops": sum(1 for o in ops if o.name.startswith("nn.")),
                    }
                    row.update(zip(FEATURES, features(work, roofs, buffers_of(ops))))
                    row["measured_s"] = k.seconds / k.calls
                    rows.append(row)
    return rows


def nnls_relative(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares of ``(x @ c - y) / y``: least squares on the active
    columns, dropping the most negative coefficient until none is negative. Columns are
    scaled to unit norm for the solve."""
    a = x / y[:, None]
    b = np.ones(len(y))
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a = a / scale
    active = list(range(x.shape[1]))
    coef = np.zeros(x.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if (sol >= 0).all():
            coef[:] = 0
            coef[active] = sol
            break
        active.pop(int(np.argmin(sol)))
    return coef / scale


def score(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    rel = np.abs(pred - y) / y
    return spearman(list(pred), list(y)), float(np.median(rel))


def fit(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    from autofusion.policy.learned import FEATURES

    x = np.array([[float(r[f]) for f in FEATURES] for r in rows])
    y = np.array([float(r["measured_s"]) for r in rows])
    keep = y > 0
    x, y = x[keep], y[keep]
    models = [r["model"] for r, k in zip(rows, keep) if k]
    coef = nnls_relative(x, y)
    held: dict[str, dict[str, float]] = {}
    for name in sorted(set(models)):
        test = np.array([m == name for m in models])
        c = nnls_relative(x[~test], y[~test])
        s_l, e_l = score(x[test] @ c, y[test])
        roof = x[test][:, FEATURES.index("roofline_s")]
        s_r, e_r = score(roof, y[test])
        held[name] = {"kernels": int(test.sum()), "learned_spearman": round(s_l, 3),
                      "learned_median_rel_err": round(e_l, 3),
                      "roofline_spearman": round(s_r, 3),
                      "roofline_median_rel_err": round(e_r, 3)}  # fmt: skip
    s, e = score(x @ coef, y)
    return {
        "features": list(FEATURES),
        "coefficients": [float(c) for c in coef],
        "trained_on": {
            "rows": len(y),
            "models": sorted(set(models)),
            "settings": list(SETTINGS),
            "command": COMMAND,
            "csv": str(CSV),
        },
        "fit": {"spearman": round(s, 3), "median_rel_err": round(e, 3)},
        "leave_one_model_out": held,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--from-csv", action="store_true", help="refit from the committed CSV")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", default="autofusion/policy/strategy_model.json")
    args = ap.parse_args(argv)
    if args.from_csv:
        with CSV.open() as fh:
            rows: list[dict[str, Any]] = list(csv.DictReader(fh))
    else:
        rows = gather(args.models.split(","), args.runs)
        CSV.parent.mkdir(parents=True, exist_ok=True)
        with CSV.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {CSV} ({len(rows)} kernels; load average "
              f"{os.getloadavg()[0]:.1f})", file=sys.stderr)  # fmt: skip
    model = fit(rows)
    Path(args.out).write_text(json.dumps(model, indent=1) + "\n")
    print(json.dumps({k: model[k] for k in ("fit", "leave_one_model_out")}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
