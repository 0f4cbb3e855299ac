"""ONNX backend node tests through the generated C (every case the importer supports).

Each supported case is imported, lowered, printed, built with -Wall -Wextra -Werror and run;
outputs must match the case's expected outputs at rtol=1e-3, atol=1e-4*max(1,max|ref|).
The runtime is compiled once per process and linked into every case (the test builds of
:mod:`autofusion.lowering.c.testing`); ``AUTOFUSION_TEST_INLINE_RUNTIME=1`` compiles it into
each case's model.c instead, as a model build does.
``python test/python/test_c_node_tests.py`` prints the pass counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx_node_cases as cases
import pytest

from autofusion.lowering.c.testing import build_and_run

# The 1,300 cases are small graphs of edge-case semantics, built one library each: at -O2 (the
# last -O wins) gcc takes about 35% less time than at -O3 (9.6 -> 6.2 s CPU for 8 cases), a
# third of CI's time. -O2 keeps strict aliasing and gcc 12's cheap vectoriser, so restrict or
# aliasing mistakes still show; the zoo, exported-model and kernel tests build at -O3.
CFLAGS = ("-O2",)

# name -> reason. Cases the C backend refuses or cannot match; strict: they must still fail.
XFAIL: dict[str, str] = {}


def _supported(name: str) -> bool:
    try:
        return cases.imported(name).module is not None
    except Exception:
        return False


SUPPORTED = [n for n in cases.case_names() if _supported(n)]


def _param(name: str):
    if name in XFAIL:
        return pytest.param(name, marks=pytest.mark.xfail(reason=XFAIL[name], strict=True))
    return name


def run_case(name: str, work: Path) -> None:
    case = cases.get_case(name)
    # A fresh import: lowering rewrites the module in place.
    imp = cases.import_case(case)
    assert imp.module is not None
    out = build_and_run(imp.module, imp.feeds(case), work, extra_cflags=CFLAGS)
    for out_name, ref in zip(case.output_names, case.outputs):
        cases.assert_close(out[out_name], ref, f"{name}: output {out_name!r}")


@pytest.mark.parametrize("name", [_param(n) for n in SUPPORTED])
def test_node_case_in_c(name: str, tmp_path: Path) -> None:
    run_case(name, tmp_path)


def test_xfail_entries_are_supported_cases() -> None:
    assert set(XFAIL) <= set(SUPPORTED), sorted(set(XFAIL) - set(SUPPORTED))


if __name__ == "__main__":
    import tempfile

    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        for n in SUPPORTED:
            try:
                run_case(n, Path(d) / n)
                passed += 1
            except Exception as e:
                failed += 1
                print(f"FAIL {n}: {str(e).splitlines()[0][:160]}")
    print(f"passed {passed} / supported {len(SUPPORTED)} / total {len(cases.case_names())}")
    sys.exit(0)
