"""ONNX backend node tests through the importer and the reference interpreter.

Every node test the importer accepts is interpreted and compared with its expected outputs
at rtol=1e-3, atol=1e-4*max(1, max|ref|). Cases the importer rejects with an
AutofusionError are unsupported (not failures); an importer crash (any other exception)
is collected as a case and fails. ``python test/python/test_onnx_node_tests.py`` prints
the counts (passed / supported / total) and the unsupported reasons.
"""

from __future__ import annotations

import collections
import re
import sys

import onnx_node_cases as cases
import pytest

from autofusion.interpreter import run_module

# name -> reason naming the bug. Keep it explicit and small; prefer fixing.
XFAIL: dict[str, str] = {}

# Node tests of op families the zoo models rely on: these must stay supported.
MUST_SUPPORT = [
    "test_relu",
    "test_conv_with_strides_padding",
    "test_gemm_default_single_elem_vector_bias",
    "test_maxpool_2d_ceil",
    "test_averagepool_2d_pads_count_include_pad",
    "test_softmax_axis_1",
    "test_matmul_4d",
    "test_transpose_all_permutations_0",
    "test_concat_2d_axis_1",
    "test_gather_negative_indices",
    "test_where_long_example",
    "test_erf",
    "test_lrn",
    "test_batchnorm_epsilon",
    "test_globalaveragepool",
    "test_flatten_axis1",
]


imported = cases.imported  # the case imported once per process


def status(name: str) -> str:
    try:
        module = imported(name).module
    except Exception:  # an importer crash is a failing case, not a skip
        return "crash"
    return "supported" if module is not None else "unsupported"


ALL = cases.case_names()
SUPPORTED = [n for n in ALL if status(n) != "unsupported"]


def _param(name: str):
    if name in XFAIL:
        return pytest.param(name, marks=pytest.mark.xfail(reason=XFAIL[name], strict=True))
    return name


@pytest.mark.parametrize("name", [_param(n) for n in SUPPORTED])
def test_node_case(name: str) -> None:
    case = cases.get_case(name)
    imp = imported(name)
    assert imp.module is not None, imp.reason
    out = run_module(imp.module, imp.feeds(case))
    assert list(out) == case.output_names
    for out_name, ref in zip(case.output_names, case.outputs):
        cases.assert_close(out[out_name], ref, f"{name}: output {out_name!r}")


def test_core_cases_are_supported() -> None:
    missing = [n for n in MUST_SUPPORT if n not in SUPPORTED]
    assert not missing, f"node tests no longer imported: {missing}"
    assert set(XFAIL) <= set(SUPPORTED), "stale XFAIL entries"


def summary() -> str:
    results: list[str] = []
    reasons: collections.Counter[str] = collections.Counter()
    for name in ALL:
        st = status(name)
        if st == "unsupported":
            reason = imported(name).reason or ""
            reasons[re.sub(r"'[^']*'", "'…'", reason.replace("<model>: ", ""))[:100]] += 1
            results.append(st)
            continue
        try:
            test_node_case(name)
            results.append("passed")
        except Exception:  # tallied, the pytest run shows details
            results.append("failed")
    tally = cases.count_summary(results)
    converted = sum(1 for n in SUPPORTED if imported(n).converted_from is not None)
    bound = sum(1 for n in SUPPORTED if imported(n).bound)
    lines = [
        f"passed {tally.get('passed', 0)} / supported {len(SUPPORTED)} / total {len(ALL)}"
        f" (failed {tally.get('failed', 0)}, unsupported {tally.get('unsupported', 0)};"
        f" {converted} supported cases converted into the importer's opsets first,"
        f" {bound} with inputs bound to constants)",
        "most common unsupported reasons:",
        *(f"  {n:5d}  {r}" for r, n in reasons.most_common(25)),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary())
    sys.exit(0)
