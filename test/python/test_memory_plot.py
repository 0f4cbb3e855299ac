"""The memory plot: one box per planned tensor, labelled, escaped, at the planned place."""

# ruff: noqa: E501 - the MLIR test input keeps one op per line

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from xdsl.parser import Parser

from autofusion.analysis.memory_plot import write_memory_plot
from autofusion.passes.plan_buffers import plan_module
from autofusion.pipeline import make_context

HOSTILE = 'a"; system("x"); //<script>&'

_QUOTED = HOSTILE.replace('"', '\\"')

TEXT = f"""
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {{
  %a = nn.relu %x {{onnx.origins = ["{_QUOTED}"]}} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = nn.sigmoid %a {{onnx.origins = ["/block/sig/Sigmoid"]}} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = nn.add %b, %a {{onnx.origins = ["/block/add/Add"]}} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %d = nn.tanh %c : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %d : tensor<4x16xf32>
}}
"""

NS = "{http://www.w3.org/2000/svg}"


def test_plot_has_one_escaped_box_per_tensor(tmp_path: Path) -> None:
    module = Parser(make_context(), TEXT).parse_module()
    plan = plan_module(module)
    out = tmp_path / "plan.svg"
    write_memory_plot(module, out, title="t<1>")
    root = ET.parse(out).getroot()  # well-formed XML despite the hostile name
    groups = root.findall(f"{NS}g")
    assert len(groups) == len(plan.intervals) == 3
    titles = [g.find(f"{NS}title").text or "" for g in groups]  # type: ignore[union-attr]
    assert any(HOSTILE in t for t in titles)
    assert any("block/sig" in t for t in titles)
    raw = out.read_text()
    assert "<script>" not in raw
    assert "&lt;script&gt;" in raw
    # Boxes of %b and %c share an offset (in place), so they sit at the same height.
    rects = [g.find(f"{NS}rect") for g in groups]
    ys = [float(r.get("y")) for r in rects]  # type: ignore[union-attr, arg-type]
    assert ys[1] == ys[2] != ys[0]
    assert re.search(r"arena 512 B", raw)
