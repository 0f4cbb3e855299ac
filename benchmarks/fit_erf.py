"""Fit af_erff's rational erf (afrt.h; the Ascend C lowering's ERF_P / ERF_Q).

erf(x) ~ x P(x^2) / Q(x^2) on [0, CLAMP], Q(0) = 1, P and Q of degree ``--degree``: a
linearised least-squares fit (x P - erf Q = 0, weighted by 1 / Q of the previous iteration,
the Sanathanan-Koerner iteration) on Chebyshev-clustered points, then reweighted by the
error to push it toward the minimax fit. Prints the coefficients (lowest degree first, 9
significant digits: each names one float32) and the fit's error in float64. ``erf`` is
Python's ``math.erf``. Deterministic: a rerun prints the same numbers.

    python benchmarks/fit_erf.py [--degree 5] [--clamp 3.92]
"""

from __future__ import annotations

import argparse
import math

import numpy as np


def fit(
    degree: int, clamp: float, points: int = 20000, iters: int = 30
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """P and Q coefficients (lowest degree first) and the max absolute / relative error."""
    x = (np.cos(np.linspace(np.pi, 0, points + 1))[1:] + 1) / 2 * clamp
    y = np.array([math.erf(v) for v in x])
    z = x * x
    w = np.ones_like(x)
    q_prev = np.ones_like(x)
    err = np.zeros_like(x)
    p = q = np.zeros(degree + 1)
    for it in range(iters):
        cols = [x * z**i for i in range(degree + 1)] + [-y * z**j for j in range(1, degree + 1)]
        a = np.stack(cols, 1)
        weight = w / q_prev
        sol = np.linalg.lstsq(a * weight[:, None], y * weight, rcond=None)[0]
        p = sol[: degree + 1]
        q = np.concatenate([[1.0], sol[degree + 1 :]])
        q_prev = np.polyval(q[::-1], z)
        err = x * np.polyval(p[::-1], z) / q_prev - y
        if it > 5:  # toward minimax: more weight where the error is large
            w = w * np.sqrt(np.abs(err) / np.abs(err).max() + 0.3)
    return p, q, float(np.abs(err).max()), float(np.abs(err / y).max())


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=5, help="degree of P and of Q")
    ap.add_argument("--clamp", type=float, default=3.92, help="fit on [0, CLAMP]")
    args = ap.parse_args()
    p, q, abs_err, rel_err = fit(args.degree, args.clamp)
    print(f"P: {', '.join(f'{v:.8e}' for v in p)}")
    print(f"Q: {', '.join(f'{v:.8e}' for v in q)}")
    print(f"max error in float64: absolute {abs_err:.3g}, relative {rel_err:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
