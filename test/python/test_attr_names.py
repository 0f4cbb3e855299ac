"""Discardable attribute names live in one table (autofusion/dialects/attrs.py).

Any other module that spells one out as a string literal fails here, so a typo cannot create
a second, silently different attribute; code imports the name from ``attrs`` instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from autofusion.dialects import attrs

PACKAGE = Path(attrs.__file__).resolve().parents[1]
NAMES = {v for k, v in vars(attrs).items() if k.isupper() and isinstance(v, str) and "." in v}


VALUES = {"BLOCKED_LAYOUT"}  # a value the table's attributes take, not a name


def test_the_table_is_complete_and_unique() -> None:
    assert VALUES <= set(vars(attrs))
    assert len(NAMES) == len([k for k in vars(attrs) if k.isupper() and k not in VALUES])
    assert {"onnx.origins", "onnx.name", "memory.offsets", "precision.storage"} <= NAMES


def test_no_module_spells_an_attribute_name() -> None:
    alternatives = "|".join(re.escape(n) for n in NAMES)
    literal = re.compile(rf"""["']({alternatives})["']""")
    hits = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == Path(attrs.__file__).resolve():
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if literal.search(line):
                hits.append(f"{path.relative_to(PACKAGE.parent)}:{no}: {line.strip()}")
    assert not hits, "use autofusion.dialects.attrs instead of:\n" + "\n".join(hits)


def test_accessors_round_trip() -> None:
    from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp

    op = ModuleOp([])
    assert attrs.origin_names(op) == []
    attrs.set_origin_names(op, ["a", "b"])
    assert attrs.origin_names(op) == ["a", "b"]
    assert attrs.onnx_name(attrs.name_dict("x")) == "x"
    assert attrs.onnx_name(None) is None
    assert attrs.string_list(ArrayAttr([IntAttr(1)])) == []
