"""docs/ops.md is the output of autofusion.frontend.coverage: regenerate it and compare."""

from __future__ import annotations

from pathlib import Path

from autofusion.frontend import coverage, registry
from autofusion.frontend.converters import tables

OPS_MD = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def test_ops_md_is_generated_from_the_code() -> None:
    assert OPS_MD.read_text() == coverage.markdown(), (
        "docs/ops.md is stale: run `python -m autofusion.frontend.coverage > docs/ops.md`"
    )


def test_every_registered_op_has_a_row() -> None:
    converters, folders = tables()
    assert [r.op for r in coverage.rows()] == sorted(set(converters) | set(folders))


def test_opset_ranges_follow_the_op_versions() -> None:
    by_op = {r.op: r for r in coverage.rows()}
    assert by_op["CastLike"].opsets == "15-28"  # CastLike-15 is its first version
    assert by_op["Gelu"].opsets == "20-28"
    assert by_op["Relu"].opsets == "9-28"
    assert by_op["RMSNormalization"].opsets == "23-28"  # new in 23, implemented there


def test_refused_versions_are_listed(monkeypatch) -> None:
    # Dropping a reviewed entry makes its newer version refused, and the table says so.
    table = dict(registry.TYPE_ONLY_VERSIONS)
    del table["Conv"]
    monkeypatch.setattr(registry, "TYPE_ONLY_VERSIONS", table)
    registry.version_problem.cache_clear()
    try:
        row = next(r for r in coverage.rows() if r.op == "Conv")
        assert row.refused == "Conv-22"
        assert row.opsets == "9-21"
    finally:
        registry.version_problem.cache_clear()
