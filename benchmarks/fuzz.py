"""Differential fuzzing for a fixed time: random ONNX graphs, autofusion vs onnxruntime.

    python benchmarks/fuzz.py --fuzz-minutes N [--seed S] [--max-ops K] [--max-parts P]
                              [--json FILE] [--no-shrink]

Generates models with ``test/python/fuzz_graphs.cases`` (hypothesis, in chunks of 20
examples seeded ``S, S+1, ...``), compiles each with fusion on and off (``threads=1``, no
cache), runs both on seeded inputs and compares every output with onnxruntime at the
project's bar. At the end it prints the counts (models, graphs, outputs compared,
mismatches, AutofusionErrors, internal errors, generator errors) and, for every distinct
finding, a reproducer; unless ``--no-shrink``, the first case of each finding kind is
re-run under hypothesis so it is shrunk to a minimal graph first. Exit status 1 when
anything was found. Compiles go to a private cache folder removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
_CACHE = tempfile.mkdtemp(prefix="autofusion-fuzz-cache-")
os.environ.setdefault("AUTOFUSION_CACHE_DIR", _CACHE)

import fuzz_graphs as fg  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hseed  # noqa: E402

CHUNK = 20


class _Found(Exception):
    """Raised inside a shrink run so hypothesis minimises the case."""


def _chunk(
    seed: int,
    strategy: Any,
    until: float,
    tally: dict[str, int],
    found: list[tuple[int, int, fg.FuzzCase, list[fg.Finding]]],
) -> None:
    """Run up to CHUNK examples of ``seed`` (no shrinking), stopping at ``until``."""
    index = [0]

    @settings(
        max_examples=CHUNK,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hseed(seed)
    @given(strategy)
    def one(case: fg.FuzzCase) -> None:
        index[0] += 1
        if time.monotonic() >= until:
            return
        try:
            findings, compared = fg.check_case(case)
        except fg.GeneratorError as e:
            tally["generator_errors"] += 1
            print(f"generator error (seed {seed}): {str(e).splitlines()[0]}", flush=True)
            return
        tally["models"] += 1
        tally["graphs"] += case.parts
        tally["outputs"] += compared
        for f in findings:
            tally[f.kind] += 1
        if findings:
            found.append((seed, index[0], case, findings))
            print(f"FOUND (seed {seed}, example {index[0]}): {findings[0].line()}", flush=True)

    one()


def _shrink(seed: int, kind: str, strategy: Any) -> str | None:
    """Re-run chunk ``seed`` with shrinking; the minimal case's report, or None."""
    last: list[str] = []

    @settings(
        max_examples=CHUNK,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @hseed(seed)
    @given(strategy)
    def one(case: fg.FuzzCase) -> None:
        try:
            findings, _ = fg.check_case(case)
        except fg.GeneratorError:
            return
        same = [f for f in findings if f.kind == kind]
        if same:
            last[:] = [fg.describe(case, same)]
            raise _Found()

    try:
        one()
    except _Found:
        return last[0] if last else None
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz-minutes", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-ops", type=int, default=10)
    ap.add_argument("--max-parts", type=int, default=4)
    ap.add_argument("--json", type=Path, help="write the counts as JSON")
    ap.add_argument("--no-shrink", action="store_true")
    args = ap.parse_args(argv)
    strategy = fg.cases(max_ops=args.max_ops, max_parts=args.max_parts)
    tally = {
        "models": 0,
        "graphs": 0,
        "outputs": 0,
        "mismatch": 0,
        "autofusion-error": 0,
        "internal-error": 0,
        "generator_errors": 0,
    }
    found: list[tuple[int, int, fg.FuzzCase, list[fg.Finding]]] = []
    start = time.monotonic()
    until = start + 60 * args.fuzz_minutes
    seed = args.seed
    try:
        while time.monotonic() < until:
            _chunk(seed, strategy, until, tally, found)
            seed += 1
        elapsed = time.monotonic() - start
        print(
            f"\n{elapsed / 60:.1f} min, seeds {args.seed}..{seed - 1}: "
            f"{tally['models']} models, {tally['graphs']} graphs, {tally['outputs']} outputs "
            f"compared (fusion on and off); {tally['mismatch']} mismatches, "
            f"{tally['autofusion-error']} AutofusionErrors, {tally['internal-error']} "
            f"internal errors, {tally['generator_errors']} generator errors"
        )
        print(
            "known-bug flags: "
            + ", ".join(f"{n}={getattr(fg, n)}" for n in dir(fg) if n.startswith("KNOWN_BUG_"))
        )
        shrunk: set[str] = set()
        for s, i, case, findings in found:
            kind = findings[0].kind
            print(f"\n=== seed {s} example {i}")
            if not args.no_shrink and kind not in shrunk:
                shrunk.add(kind)
                report = _shrink(s, kind, strategy)
                if report:
                    print("(shrunk)\n" + report)
                    continue
            print(fg.describe(case, findings))
        if args.json:
            args.json.write_text(
                json.dumps(
                    {**tally, "minutes": elapsed / 60, "seeds": [args.seed, seed - 1]}, indent=1
                )
            )
    finally:
        shutil.rmtree(_CACHE, ignore_errors=True)
    bad = tally["mismatch"] + tally["autofusion-error"] + tally["internal-error"]
    return 1 if bad or tally["generator_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
