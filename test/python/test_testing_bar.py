"""``autofusion.testing``: the one correctness bar and its documented edge cases (NaN,
infinities, empty arrays, integer and bool dtypes, shape and dtype mismatches), and that the
bench, the Ascend C zoo check and the C test helpers use it rather than a copy."""

from __future__ import annotations

import numpy as np
import pytest

from autofusion import testing
from autofusion.testing import assert_close, close, compare

F = np.float32


def test_within_and_outside_the_bar() -> None:
    ref = np.array([1.0, 2.0, 4.0], F)
    assert close(ref * F(1.0009), ref)  # rtol 1e-3
    assert not close(ref * F(1.002), ref)
    # atol scales with the largest finite |ref|: 1e-4 * 1000 = 0.1 for the small element.
    big = np.array([1000.0, 0.0], F)
    assert close(np.array([1000.0, 0.09], F), big)
    assert not close(np.array([1000.0, 0.11], F), big)
    # ... and never drops below 1e-4.
    assert close(np.array([5e-5], F), np.array([0.0], F))
    assert not close(np.array([2e-4], F), np.array([0.0], F))


def test_nan_rules() -> None:
    ref = np.array([np.nan, 1.0], F)
    assert close(np.array([np.nan, 1.0], F), ref)  # NaN where ref is NaN
    assert not close(np.array([0.0, 1.0], F), ref)  # a number where ref is NaN
    assert not close(np.array([1.0, np.nan], F), np.array([1.0, 1.0], F))  # NaN for a number
    c = compare(np.array([1.0, np.nan], F), np.array([1.0, 1.0], F))
    assert c.max_abs_err == np.inf
    assert "1 of 2 elements differ" in c.reason
    # an all-NaN reference has peak 0 and matches NaN
    assert compare(np.array([np.nan], F), np.array([np.nan], F)) == testing.Comparison(
        True, 0.0, 0.0, 0.0
    )


def test_inf_rules() -> None:
    ref = np.array([np.inf, -np.inf, 3.0], F)
    assert close(ref.copy(), ref)
    assert not close(np.array([-np.inf, -np.inf, 3.0], F), ref)  # inf vs -inf
    assert not close(np.array([3e38, -np.inf, 3.0], F), ref)  # a number for inf
    assert not close(np.array([np.nan, -np.inf, 3.0], F), ref)  # NaN for inf
    assert not close(np.array([np.inf, -np.inf, np.inf], F), ref)  # inf for a number
    # infinities do not count towards the peak: 3.0 sets atol to 1e-4 * 3
    c = compare(np.array([np.inf, -np.inf, 3.0002], F), ref)
    assert c.match
    assert c.peak == 3.0
    assert c.max_abs_err == pytest.approx(2e-4, rel=1e-2)


def test_empty_integer_bool_and_mismatches() -> None:
    assert close(np.zeros((0, 3), F), np.zeros((0, 3), F))
    assert not close(np.zeros((0, 3), F), np.zeros((3, 0), F))
    i = np.array([1, -2, 3], np.int64)
    assert close(i.copy(), i)
    c = compare(np.array([1, -2, 4], np.int64), i)
    assert not c.match
    assert c.max_abs_err == 1.0
    assert "(exact)" in c.reason
    assert not close(i.astype(np.int32), i)  # dtype mismatch
    assert not close(np.array([1.0, -2.0, 3.0], F), i)
    b = np.array([True, False])
    assert close(b.copy(), b)
    assert not close(~b, b)
    assert "shape (2,), expected (3,)" in compare(np.zeros(2, F), np.zeros(3, F)).reason
    assert "dtype float64, expected float32" in compare(np.zeros(2), np.zeros(2, F)).reason
    assert close(F(1.0), F(1.0))  # rank 0
    assert not close(F(2.0), F(1.0))


def test_assert_close_names_the_output_and_worst_element() -> None:
    ref = np.array([[1.0, 2.0], [3.0, 4.0]], F)
    assert_close(ref.copy(), ref, "y")
    got = ref.copy()
    got[1, 0] = 3.5
    with pytest.raises(AssertionError, match=r"y: 1 of 4 elements differ .*at \(1, 0\)"):
        assert_close(got, ref, "y")


def test_the_tools_use_the_shared_bar() -> None:
    """bench.compare, the Ascend C zoo check and the C test helpers agree with testing on the
    cases where their former copies disagreed (inf in ref, NaN vs NaN)."""
    from autofusion.lowering.ascendc import zoo_check
    from autofusion.lowering.c import testing as c_testing
    from autofusion.tools import bench

    assert c_testing.assert_close is assert_close
    assert c_testing.close is close
    assert zoo_check._close is close
    cases = [
        (np.array([np.inf, 1.0], F), np.array([np.inf, 1.5], F)),  # inf peak: was "match"
        (np.array([np.nan, 1.0], F), np.array([np.nan, 1.0], F)),  # NaN == NaN
        (np.array([-np.inf, 1.0], F), np.array([np.inf, 1.0], F)),
    ]
    for ref, got in cases:
        want = close(got, ref)
        assert zoo_check._close(got, ref) is want
        assert bench.compare({"y": got}, {"y": ref})["match"] is want
    assert not close(cases[0][1], cases[0][0])
    assert close(cases[1][1], cases[1][0])
