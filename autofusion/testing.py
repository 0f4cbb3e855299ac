"""The project's correctness bar: when an output of ours counts as equal to a reference's.

Every comparison of our outputs with onnxruntime or the interpreter (``autofusion-bench``,
the Ascend C zoo check, the C backend's test helpers, the test suite) goes through this
module, so that "matches" means one thing everywhere::

    from autofusion.testing import assert_close, close, compare

    compare(got, ref)            # Comparison(match, max_abs_err, max_rel_err, peak, reason)
    close(got, ref)              # compare(got, ref).match
    assert_close(got, ref, "y")  # AssertionError naming "y" and the worst element otherwise

The rules (``ref`` is the reference, ``got`` ours):

* Shapes must be equal (no broadcasting) and element types must be equal.
* Integer and bool outputs must be equal element by element.
* Float outputs: ``peak`` is ``max |ref|`` over the *finite* elements of ``ref`` (0 if there
  are none), ``atol = 1e-4 * max(1, peak)`` and every finite ``ref`` element needs
  ``|got - ref| <= atol + 1e-3 * |ref|`` (so ``allclose(rtol=1e-3, atol=1e-4*max(1,
  max|ref|))``). Where ``ref`` is NaN, ``got`` must be NaN; where ``ref`` is +inf or -inf,
  ``got`` must be the same infinity; a NaN or infinity in ``got`` where ``ref`` is finite
  fails.
* Empty arrays of equal shape and type match.

``max_abs_err`` is the largest ``|got - ref|`` (``inf`` where a NaN/infinity rule fails, 0
where it holds); ``max_rel_err`` is ``max_abs_err / peak`` (the error relative to the
output's scale; ``max_abs_err`` itself when ``peak`` is 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RTOL = 1e-3
"""Relative tolerance of the bar."""
ATOL_SCALE = 1e-4
"""Absolute tolerance per unit of the output's scale: ``atol = ATOL_SCALE * max(1, peak)``."""

REDUCED_PRECISION_BAR: dict[str, tuple[float, float]] = {"fp16": (5e-3, 5e-3), "bf16": (3e-2, 3e-2)}
"""The looser bar ``(rtol, atol_scale)`` for a model whose MatMul/Gemm/Conv compute in 16
bits (config ``precision.fp16_ops`` / ``bf16_ops``: weights stored in that type, activations
rounded to it at the op, fp32 accumulation), used as
``compare(got, ref, *REDUCED_PRECISION_BAR["bf16"])``. Rounding an operand costs up to its
format's unit roundoff u (fp16 2^-11 ~ 4.9e-4, bf16 2^-9 ~ 2e-3) relative, so each product
up to 2u; over a chain of contractions the output error grows to a few u of the output's
scale, so the bar allows about 10u (fp16) and 15u (bf16). Accumulation stays fp32, so
nothing else loosens."""


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`: ``reason`` is empty when ``match``, else says why not
    (shape, element type, or how many elements are off and the worst one)."""

    match: bool
    max_abs_err: float
    max_rel_err: float
    peak: float
    reason: str = ""


def compare(
    got: object, ref: object, rtol: float = RTOL, atol_scale: float = ATOL_SCALE
) -> Comparison:
    """Compare ``got`` with the reference ``ref`` under the bar described in the module
    (``rtol`` / ``atol_scale`` loosen it, e.g. :data:`REDUCED_PRECISION_BAR`)."""
    g, r = np.asarray(got), np.asarray(ref)
    inf = float("inf")
    if g.shape != r.shape:
        return Comparison(False, inf, inf, 0.0, f"shape {g.shape}, expected {r.shape}")
    if g.dtype != r.dtype:
        return Comparison(False, inf, inf, 0.0, f"dtype {g.dtype}, expected {r.dtype}")
    if r.size == 0:
        return Comparison(True, 0.0, 0.0, 0.0)
    if r.dtype.kind != "f":
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        peak = float(np.max(np.abs(r64)))
        err = np.abs(g64 - r64)
        bad = g != r
        return _result(g, r, err, bad, peak, 0.0)
    g64, r64 = g.astype(np.float64), r.astype(np.float64)
    finite = np.isfinite(r64)
    peak = float(np.max(np.abs(r64[finite]))) if finite.any() else 0.0
    atol = atol_scale * max(1.0, peak)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g64 - r64)
    # Finite reference: within tolerance (NaN in got makes err NaN, which fails the test).
    ok = np.where(finite, err <= atol + rtol * np.abs(r64), False)
    # Non-finite reference: NaN needs NaN, an infinity needs the same infinity.
    special = ~finite
    ok |= special & np.isnan(r64) & np.isnan(g64)
    ok |= special & ~np.isnan(r64) & (g64 == r64)
    bad = ~ok
    err = np.where(special & ok, 0.0, err)
    err = np.where(np.isnan(err), inf, err)
    return _result(g, r, err, bad, peak, atol, rtol)


def _result(
    g: np.ndarray,
    r: np.ndarray,
    err: np.ndarray,
    bad: np.ndarray,
    peak: float,
    atol: float,
    rtol: float = RTOL,
) -> Comparison:
    abs_err = float(np.max(err))
    rel_err = abs_err / peak if peak > 0 else abs_err
    if not bad.any():
        return Comparison(True, abs_err, rel_err, peak)
    n_bad = int(np.count_nonzero(bad))
    worst = np.where(bad, err, -1.0)
    at = np.unravel_index(int(np.argmax(worst)), r.shape) if r.ndim else ()
    where = f"at {tuple(int(i) for i in at)} " if r.ndim else ""
    tol = f" (rtol {rtol}, atol {atol:.3g})" if r.dtype.kind == "f" else " (exact)"
    reason = (
        f"{n_bad} of {r.size} elements differ{tol}; worst {where}got {g[at]!r}, expected {r[at]!r}"
    )
    return Comparison(False, abs_err, rel_err, peak, reason)


def close(got: object, ref: object) -> bool:
    """Whether ``got`` matches the reference ``ref`` under the project's bar."""
    return compare(got, ref).match


def assert_close(got: object, ref: object, what: str = "output") -> None:
    """Raise ``AssertionError`` naming ``what`` unless ``got`` matches ``ref``."""
    c = compare(got, ref)
    if not c.match:
        raise AssertionError(f"{what}: {c.reason}")
