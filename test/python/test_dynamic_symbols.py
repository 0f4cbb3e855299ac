"""Symbolic input dims and their declared ranges (issue 12, item 2): ``dim_param``s and
unnamed dynamic dims are symbols; ``--dynamic`` / ``dynamic=`` / the config's ``dynamic`` key
declare ranges (in that order of precedence, else the default); every bad range is one clear
error naming the symbol and where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from hostile import assert_clean_api_error, assert_clean_cli_error, run_tool
from onnx import TensorProto, helper

from autofusion.errors import AutofusionError
from autofusion.frontend.symbols import (
    DEFAULT_RANGE,
    check_range,
    make_plan,
    parse_range_specs,
    signature,
)
from autofusion.policy.config import config_from_dict


def _model(dims_x: list, dims_y: list) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims_x)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims_y)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "g", [x, y], [z])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_dim_params_are_shared_and_unnamed_dims_get_stable_names() -> None:
    model = _model(["batch", None, 4], ["batch", 1, 4])
    sig = signature(model, "m.onnx")
    assert [(s.name, s.dims) for s in sig] == [
        ("x", ("batch", "x_dim1", 4)),
        ("y", ("batch", 1, 4)),
    ]
    assert signature(model, "m.onnx") == sig  # stable
    # a generated name never merges with a real dim_param spelled the same
    clash = _model(["x_dim1", None], ["x_dim1", 1])
    assert signature(clash, "m.onnx")[0].dims == ("x_dim1", "x_dim1_")
    plan = make_plan(model, "m.onnx")
    assert plan.symbols == ["batch", "x_dim1"]
    assert plan.uses("batch") == ["x[0]", "y[0]"]


def test_range_precedence_option_then_config_then_default() -> None:
    model = _model(["batch", "seq", 4], ["batch", "seq", 4])
    plan = make_plan(
        model,
        "m.onnx",
        ranges={"seq": (1, 64)},
        config_ranges={"seq": (2, 8), "batch": (1, 4)},
        config_source="c.yaml",
    )
    assert plan.ranges == {"batch": (1, 4), "seq": (1, 64)}
    assert plan.origins == {"batch": "config c.yaml", "seq": "dynamic="}
    assert make_plan(model, "m.onnx").ranges == {"batch": DEFAULT_RANGE, "seq": DEFAULT_RANGE}
    pinned = make_plan(model, "m.onnx", pins={"x": [2, 7, 4]}, ranges={"seq": (1, 64)})
    assert pinned.pinned == {"batch": 2, "seq": 7}
    assert pinned.free == []
    assert pinned.report()["seq"] == {"range": [1, 64], "origin": "dynamic=", "value": 7,
                                      "dims": ["x[1]", "y[1]"]}  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"ranges": {"sq": (1, 2)}}, ["dynamic= declares a range for 'sq'", "symbols: batch"]),
        (
            {"config_ranges": {"b": (1, 2)}, "config_source": "c.yaml"},
            ["config c.yaml declares a range for 'b'"],
        ),
        (
            {"pins": {"x": [9, 4]}, "ranges": {"batch": (1, 8)}},
            ["input 'x' dim 0 (symbol 'batch') is 9", "outside its declared range 1..8 (dynamic=)"],
        ),
        ({"pins": {"x": [2, 5]}}, ["input 'x' has size 5 in dim 1", "declares 4"]),
        (
            {"pins": {"x": [2, 4], "y": [3, 4]}},
            ["disagree on dimension 'batch'", "2 for input 'x'"],
        ),
    ],
)
def test_bad_ranges_and_pins(kwargs: dict, needles: list[str]) -> None:
    model = _model(["batch", 4], ["batch", 4])
    with pytest.raises(AutofusionError) as e:
        make_plan(model, "m.onnx", **kwargs)
    assert_clean_api_error(e, "m.onnx", *needles)


def test_static_model_rejects_any_range() -> None:
    with pytest.raises(AutofusionError) as e:
        make_plan(_model([2, 4], [2, 4]), "m.onnx", ranges={"seq": (1, 8)})
    assert_clean_api_error(e, "'seq'", "none: every input dim is static")


@pytest.mark.parametrize(
    ("value", "needle"),
    [("0..4", "1 <= LO <= HI"), ("4..2", "1 <= LO <= HI"), ("1-4", "LO..HI"), ([1], "two integers"),
     ([1, 2.5], "two integers"), ((True, 3), "two integers"), ("x", "LO..HI")],
)  # fmt: skip
def test_check_range_errors(value: object, needle: str) -> None:
    with pytest.raises(AutofusionError) as e:
        check_range(value, "dynamic['seq']")
    assert_clean_api_error(e, "dynamic['seq']", needle)


def test_range_specs() -> None:
    assert parse_range_specs(["seq=1..512", "a=b=2..3"]) == {"seq": (1, 512), "a=b": (2, 3)}
    assert check_range(" 3 .. 9 ", "x") == (3, 9)
    with pytest.raises(AutofusionError, match="given twice"):
        parse_range_specs(["seq=1..2", "seq=1..3"])


def test_config_keys_validated() -> None:
    cfg = config_from_dict(
        {"dynamic": {"seq": [1, 512]}, "dynamic_shape_cache": {"enabled": False, "size": 7}},
        "c.yaml",
    )
    assert cfg.dynamic == {"seq": (1, 512)}
    assert (cfg.shape_cache_enabled, cfg.shape_cache_size, cfg.shape_cache_capacity) == (
        False,
        7,
        1,
    )
    assert config_from_dict({}).shape_cache_capacity == 50
    for bad, needle in [
        ({"dynamic": {"seq": [0, 5]}}, "'dynamic.seq': range 0..5"),
        ({"dynamic": [1, 2]}, "'dynamic': expected a mapping"),
        (
            {"dynamic_shape_cache": {"size": 0}},
            "'dynamic_shape_cache.size' must be an integer >= 1",
        ),
        ({"dynamic_shape_cache": {"enabled": "yes"}}, "'dynamic_shape_cache.enabled' must be"),
        ({"dynamic_shape_cache": {"sise": 3}}, "unknown config key 'dynamic_shape_cache.sise'"),
        ({"dynamic_shape_cache": 50}, "must be a mapping"),
    ]:
        with pytest.raises(AutofusionError) as e:
            config_from_dict(bad, "c.yaml")
        assert_clean_api_error(e, "c.yaml", needle)


DYN = Path(__file__).parent / "data" / "exported" / "bert_tsdyn.onnx"


def test_compile_cli_config_range_and_report(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dynamic: {seq: [2, 16]}\n")
    out, rep = tmp_path / "out", tmp_path / "r.json"
    args = [str(DYN), "-o", str(out), "--config", str(cfg), "--input-shape", "attention_mask=1x8"]
    proc = run_tool("compile", [*args, "--report", str(rep)])
    assert proc.returncode == 0, proc.stderr.decode()
    sym = json.loads(rep.read_text())["symbols"]["seq"]
    assert sym == {"range": [2, 16], "origin": f"config {cfg}", "value": 8,
                   "dims": ["input_ids[1]", "attention_mask[1]", "token_type_ids[1]"]}  # fmt: skip
    bad = [str(DYN), "-o", str(tmp_path / "o2"), "--config", str(cfg), "--input-shape",
           "input_ids=1x32"]  # fmt: skip
    assert_clean_cli_error(run_tool("compile", bad), "is 32", f"range 2..16 (config {cfg})")
    # the option beats the config
    ok = [*bad, "--dynamic", "seq=1..32", "--report", str(rep)]
    assert run_tool("compile", ok).returncode == 0
    assert json.loads(rep.read_text())["symbols"]["seq"]["origin"] == "--dynamic"


def test_bench_cli_checks_ranges_and_pins() -> None:
    assert_clean_cli_error(run_tool("bench", [str(DYN)]), "no --input-shape fixes", "'seq'")
    assert_clean_cli_error(
        run_tool("bench", [str(DYN), "--input-shape", "input_ids=1x9", "--dynamic", "seq=1..8"]),
        "is 9, outside its declared range 1..8 (--dynamic)",
    )
