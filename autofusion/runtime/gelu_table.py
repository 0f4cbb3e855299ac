"""The built-in GELU epilogue's piecewise polynomial (afrt.h, ``AFRT_GELU_TAB``).

GELU(y) = 0.5 y + |y| r(|y|) with r(a) = erf(a / sqrt 2) / 2. afrt.h evaluates r by pieces:
``u = min(a * AFRT_GELU_SCALE, PIECES - 0.5)``, piece ``i = (int) u``, ``t = u - i`` in [0, 1),
and a polynomial of degree ``DEGREE`` in t whose coefficients it reads from a table of
``PIECES`` entries per power (on AVX-512 one two-register permute per coefficient). Pieces 0 to
``PIECES - 2`` cover [0, ``CLAMP``] (af_erff's clamp 3.92 scaled by sqrt 2); the last one is the
constant 1/2, which every a past the clamp takes, so large negative y gives +0.0 and large
positive y gives y, as the rational form did.

The coefficients are a least-squares Chebyshev fit per piece, in float64, then rounded to
float32. ``python -m autofusion.runtime.gelu_table`` prints the C table;
``test_gelu_epilogue.py`` checks that afrt.h's table is this one and its float32 error.
"""

from __future__ import annotations

import math

import numpy as np

PIECES = 32
DEGREE = 4
# af_erff's clamp on |y| / sqrt 2, on |y| (AFRT_ERF_CLAMP / AFRT_GELU_INV_SQRT2 in float32)
CLAMP = float(np.float32(np.float32(3.92) / np.float32(float.fromhex("0x1.6a09e6p-1"))))
SCALE = float(np.float32((PIECES - 1) / CLAMP))


def _r(a: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(a / math.sqrt(2.0)) / 2.0


def coefficients() -> np.ndarray:
    """float32 [DEGREE + 1, PIECES]: row k holds the coefficient of t**k of every piece."""
    t = 0.5 + 0.5 * np.cos(np.linspace(0.0, math.pi, 2000))
    rows = []
    for i in range(PIECES - 1):
        fit = np.polynomial.chebyshev.Chebyshev.fit(t, _r((t + i) / SCALE), DEGREE)
        rows.append(fit.convert(kind=np.polynomial.Polynomial).coef)
    rows.append([0.5] + [0.0] * DEGREE)
    return np.asarray(rows, dtype=np.float64).astype(np.float32).T.copy()


def evaluate(a: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """r(a) for float32 a >= 0 as afrt.h computes it (float32 steps, fused multiply-adds
    emulated in float64, which is exact for these products)."""
    a = np.asarray(a, dtype=np.float32)
    u = np.minimum(a * np.float32(SCALE), np.float32(PIECES - 0.5))
    i = u.astype(np.int32)
    t = u - i.astype(np.float32)
    p = tab[DEGREE, i]
    for k in range(DEGREE - 1, -1, -1):
        p = (p.astype(np.float64) * t + tab[k, i]).astype(np.float32)
    return p


def c_table(tab: np.ndarray) -> str:
    lines = []
    for k in range(DEGREE + 1):
        vals = [f"{float(v):.9e}f" for v in tab[k]]
        body = ",\n     ".join(", ".join(vals[j : j + 4]) for j in range(0, PIECES, 4))
        lines.append(f"    {{{body}}}")
    return ",\n".join(lines)


if __name__ == "__main__":
    tab = coefficients()
    print(f"#define AFRT_GELU_SCALE {SCALE!r}f")
    print(c_table(tab))
    a = np.linspace(0.0, CLAMP * 1.1, 400001).astype(np.float32)
    err = float(np.max(np.abs(evaluate(a, tab) - _r(a.astype(np.float64)))))
    print(f"/* max |error| of r: {err:.3g} */")
