"""Unclear errors made clear (reliability issue 10, items 7, 8, 9, 12, 13b/c): every bad input
here ends in one ``error:`` line / one-line ``AutofusionError``, exit 1, nothing written; and
the silently-ignored options (config ``memory_limit_mb``, ``--threads``) now take effect."""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import (
    assert_clean_api_error,
    assert_clean_cli_error,
    assert_nothing_written,
    run_tool,
)
from onnx import TensorProto, helper

import autofusion
from autofusion.errors import AutofusionError

# ---- small models ----------------------------------------------------------------------


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto],
           inits: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:  # fmt: skip
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _vi(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _relu_model() -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [_vi("x", [2, 4])],
                  [_vi("y", [2, 4])])  # fmt: skip


@pytest.fixture
def relu_path(tmp_path: Path) -> Path:
    p = tmp_path / "relu.onnx"
    onnx.save(_relu_model(), p)
    return p


# ---- item 12: config memory_limit_mb tiles; numeric config values validated -------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -5, 0, True, "64"])
def test_config_memory_limit_rejects_non_finite_and_non_numbers(value: object) -> None:
    from autofusion.policy.config import config_from_dict

    with pytest.raises(AutofusionError) as ei:
        config_from_dict({"memory_limit_mb": value}, "cfg.json")
    assert_clean_api_error(ei, "cfg.json", "'memory_limit_mb'")


@pytest.mark.parametrize("text", ["memory_limit_mb: .nan\n", "memory_limit_mb: .inf\n",
                                  "memory_limit_mb: yes\n", "aggressiveness: true\n",
                                  "aggressiveness: 1.0\n"])  # fmt: skip
def test_yaml_config_numbers_validated(tmp_path: Path, text: str) -> None:
    from autofusion.policy.config import load_config

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    with pytest.raises(AutofusionError) as ei:
        load_config(cfg)
    assert_clean_api_error(ei, str(cfg))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), True])
def test_api_memory_limit_rejects_non_finite(value: object) -> None:
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(_relu_model(), memory_limit_mb=value)  # type: ignore[arg-type]
    assert_clean_api_error(ei, "memory_limit_mb")
    with pytest.raises(AutofusionError) as ei:
        autofusion.set_memory_limit(value)  # type: ignore[arg-type]
    assert_clean_api_error(ei, "set_memory_limit")


def test_config_memory_limit_tiles_exactly_like_the_option(tmp_path: Path) -> None:
    from autofusion.api import open_model, prepare_module
    from autofusion.passes.tile_fusion import MIB
    from autofusion.pipeline import PipelineOptions

    _, untiled = prepare_module(open_model("zoo:tiny_cnn"), PipelineOptions())
    limit = untiled["arena_bytes"] / 2 / MIB
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"memory_limit_mb": limit}))
    _, by_opt = prepare_module(open_model("zoo:tiny_cnn"), PipelineOptions(memory_limit_mb=limit))
    _, by_cfg = prepare_module(open_model("zoo:tiny_cnn"), PipelineOptions(config=str(cfg)))
    assert by_cfg["arena_bytes"] == by_opt["arena_bytes"] <= limit * MIB
    assert by_cfg["arena_bytes"] < untiled["arena_bytes"]
    assert f"tile-fusion{{memory_limit_mb={limit}}}" in by_cfg["pipeline"]


def test_memory_limit_precedence_option_over_config_over_default(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"memory_limit_mb": 300}))
    autofusion.set_memory_limit(200)
    try:
        by_cfg = autofusion.compile(_relu_model(), config=cfg, threads=1)
        by_opt = autofusion.compile(_relu_model(), config=cfg, threads=1, memory_limit_mb=100)
        by_default = autofusion.compile(_relu_model(), threads=1)
    finally:
        autofusion.set_memory_limit(None)
    assert "memory_limit_mb=300" in by_cfg.report["pipeline"]
    assert "memory_limit_mb=100" in by_opt.report["pipeline"]
    assert "memory_limit_mb=200" in by_default.report["pipeline"]
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(by_cfg.run({"x": x})["y"], np.maximum(x, 0))


def test_compile_cli_config_memory_limit_tiles(tmp_path: Path, relu_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"memory_limit_mb": 64}))
    out = tmp_path / "out"
    proc = run_tool("compile", [str(relu_path), "-o", str(out), "--config", str(cfg)])
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads((out / "report.json").read_text())
    assert "tile-fusion{memory_limit_mb=64" in report["pipeline"]


# ---- item 12: --threads N is baked into the build --------------------------------------


def _threads_of_build(out: Path) -> tuple[int, int]:
    """(af_default_threads(), af_num_threads() after af_create(path, 0)) of a build."""
    lib = ctypes.CDLL(str(out / "libmodel.so"))
    lib.af_create.restype = ctypes.c_void_p
    lib.af_create.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.af_destroy.argtypes = [ctypes.c_void_p]
    baked = lib.af_default_threads()
    m = lib.af_create(str(out / "weights.bin").encode(), 0)
    assert m, "af_create failed"
    used = lib.af_num_threads()
    lib.af_destroy(m)
    return baked, used


def test_compile_threads_is_baked_into_the_library(tmp_path: Path, relu_path: Path) -> None:
    import os

    out = tmp_path / "out1"
    proc = run_tool("compile", [str(relu_path), "-o", str(out), "--threads", "1"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert _threads_of_build(out) == (1, 1)
    out3 = tmp_path / "out3"
    proc = run_tool("compile", [str(relu_path), "-o", str(out3), "--threads", "3"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert _threads_of_build(out3) == (3, 3)
    plain = tmp_path / "plain"
    proc = run_tool("compile", [str(relu_path), "-o", str(plain)])
    assert proc.returncode == 0, proc.stderr.decode()
    assert _threads_of_build(plain) == (0, os.cpu_count())


# ---- item 9: attribute kinds are checked where converters read them; names defined once --


def _w() -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")


def _conv(**attrs: object) -> onnx.ModelProto:
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    return _model([node], [_vi("x", [1, 1, 5, 5])], [_vi("y", [1, 2, 3, 3])], [_w()])


def _unary(op: str, **attrs: object) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], name="n", **attrs)
    return _model([node], [_vi("x", [2, 4])], [_vi("y", [2, 4])])


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        (_conv(strides="11"), ["node 'c' (Conv)", "'strides'", "INTS", "got STRING"]),
        (_conv(kernel_shape=[3.0, 3.0]), ["'kernel_shape'", "INTS", "got FLOATS"]),
        (_conv(group=1.0), ["'group'", "must be INT", "got FLOAT"]),
        (_unary("Softmax", axis=1.0), ["node 'n' (Softmax)", "'axis'", "INT", "got FLOAT"]),
        (_unary("LeakyRelu", alpha=1), ["(LeakyRelu)", "'alpha'", "FLOAT", "got INT"]),
        (_unary("Elu", alpha="x"), ["(Elu)", "'alpha'", "FLOAT", "got STRING"]),
    ],
)
def test_attribute_of_the_wrong_kind(tmp_path: Path, model: onnx.ModelProto,
                                     needles: list[str]) -> None:  # fmt: skip
    path = tmp_path / "bad.onnx"
    onnx.save(model, path)
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(path)
    assert_clean_api_error(ei, str(path), *needles)
    out = tmp_path / "out"
    proc = run_tool("compile", [str(path), "-o", str(out)])
    assert_clean_cli_error(proc, "bad.onnx", *needles)
    assert_nothing_written(out)


def test_attribute_kind_checked_for_the_ai_onnx_domain_spelling(tmp_path: Path) -> None:
    from autofusion.frontend.onnx_import import import_onnx

    # the schema says FLOAT; without it the converter's float default would also admit INT
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="n", domain="ai.onnx", alpha=1)
    model = _model([node], [_vi("x", [2, 4])], [_vi("y", [2, 4])])
    model.opset_import[0].domain = "ai.onnx"
    with pytest.raises(AutofusionError) as ei:
        import_onnx(model)
    assert_clean_api_error(ei, "'alpha' must be FLOAT", "got INT")


def test_attribute_check_keeps_well_typed_models_working() -> None:
    from autofusion.frontend.onnx_import import import_onnx

    model = _conv(strides=[1, 1], kernel_shape=[3, 3], group=1)
    assert "nn.conv" in str(import_onnx(model))


def _add(a: str, b: str, out: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Add", [a, b], [out], name=name)


def _init(name: str, value: float) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.full([2, 4], value, np.float32), name)


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        (
            _model(
                [_add("x", "x", "y", "a")], [_vi("x", [2, 4]), _vi("x", [2, 4])], [_vi("y", [2, 4])]
            ),
            ["graph input 'x' is defined more than once"],
        ),
        (
            _model(
                [_add("x", "x", "y", "a")], [_vi("x", [2, 4])], [_vi("y", [2, 4]), _vi("y", [2, 4])]
            ),
            ["graph output 'y' is defined more than once"],
        ),
        (
            _model(
                [_add("x", "w", "y", "a")],
                [_vi("x", [2, 4])],
                [_vi("y", [2, 4])],
                [_init("w", 1.0), _init("w", 2.0)],
            ),
            ["initializer 'w' is defined more than once"],
        ),
        (
            _model(
                [_add("x", "x", "t", "a"), _add("x", "x", "t", "b")],
                [_vi("x", [2, 4])],
                [_vi("t", [2, 4])],
            ),
            ["node 'b' (Add) output 't' is already produced by node 'a'"],
        ),
        (
            _model(
                [_add("x", "x", "w", "a")],
                [_vi("x", [2, 4])],
                [_vi("w", [2, 4])],
                [_init("w", 1.0)],
            ),
            ["node 'a' (Add) output 'w'", "by an initializer"],
        ),
        (
            _model([_add("x", "x", "x", "a")], [_vi("x", [2, 4])], [_vi("x", [2, 4])]),
            ["node 'a' (Add) output 'x'", "by a graph input"],
        ),
    ],
    ids=["inputs", "outputs", "initializers", "node-twice", "node-over-init", "node-over-input"],
)
def test_names_defined_twice(tmp_path: Path, model: onnx.ModelProto, needles: list[str]) -> None:
    from autofusion.frontend.onnx_import import import_onnx

    path = tmp_path / "dup.onnx"
    onnx.save(model, path)
    with pytest.raises(AutofusionError) as ei:
        import_onnx(path)
    assert_clean_api_error(ei, str(path), *needles)
    proc = run_tool("opt", [str(path)])
    assert_clean_cli_error(proc, *needles)


def test_initializer_that_is_also_an_input_stays_a_constant() -> None:
    """IR >= 4: an initializer may also be listed as a graph input (a default value)."""
    model = _model([_add("x", "w", "y", "a")], [_vi("x", [2, 4]), _vi("w", [2, 4])],
                   [_vi("y", [2, 4])], [_init("w", 1.5)])  # fmt: skip
    m = autofusion.compile(model, threads=1)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(m.run({"x": x})["y"], x + 1.5, rtol=1e-6)


# ---- item 8: a user policy that fails is named, with its method and the nodes ------------

POLICIES = """
from autofusion.policy import BasePolicy


class Raises(BasePolicy):
    def should_fuse(self, producer, consumer):
        raise ValueError("threshold table\\nis empty")


class BadInit(BasePolicy):
    def __init__(self, **options):
        raise RuntimeError("no licence file")


class ReturnsNone(BasePolicy):
    def should_fuse(self, producer, consumer):
        pass


class BadDescribe(BasePolicy):
    def should_fuse(self, producer, consumer):
        return True

    def describe(self):
        raise KeyError("name")


class NotAPolicy:
    pass
"""


@pytest.fixture
def policy_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "pol"
    d.mkdir()
    (d / "hostile_policies.py").write_text(POLICIES)
    (d / "broken_policy_mod.py").write_text("raise OSError('cannot open policy table')\n")
    monkeypatch.syspath_prepend(str(d))
    monkeypatch.setenv("PYTHONPATH", str(d))
    return d


def _two_op_model() -> onnx.ModelProto:
    """x -> Relu (r) -> Sigmoid (s): one elementwise fusion for the policy to judge."""
    nodes = [helper.make_node("Relu", ["x"], ["t"], name="r"),
             helper.make_node("Sigmoid", ["t"], ["y"], name="s")]  # fmt: skip
    return _model(nodes, [_vi("x", [2, 4])], [_vi("y", [2, 4])])


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        (
            "hostile_policies:Raises",
            [
                "hostile_policies.Raises",
                "'hostile_policies:Raises'",
                "should_fuse(producer 'r' (Relu), consumer 's' (Sigmoid))",
                "ValueError: threshold table is empty",
            ],
        ),
        (
            "hostile_policies:ReturnsNone",
            ["hostile_policies.ReturnsNone", "should_fuse(", "returned None", "True or False"],
        ),
        (
            "hostile_policies:BadDescribe",
            ["hostile_policies.BadDescribe", "describe()", "KeyError"],
        ),
        (
            "hostile_policies:BadInit",
            ["'hostile_policies:BadInit'", "BadInit.__init__()", "RuntimeError: no licence file"],
        ),
        ("hostile_policies:NotAPolicy", ["NotAPolicy is not an autofusion.BasePolicy subclass"]),
        ("hostile_policies:Missing", ["module 'hostile_policies' has no 'Missing'"]),
        ("no_such_policy_module:P", ["cannot import module 'no_such_policy_module'"]),
        (
            "broken_policy_mod:P",
            ["importing module 'broken_policy_mod' raised OSError: cannot open policy table"],
        ),
        ("hostile_policies:", ["expected 'module:Class' or '@token'"]),
        (":Raises", ["expected 'module:Class' or '@token'"]),
    ],
)
def test_failing_user_policy_is_a_clear_error(policy_dir: Path, tmp_path: Path, spec: str,
                                              needles: list[str]) -> None:  # fmt: skip
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(_two_op_model(), policy=spec)
    assert_clean_api_error(ei, *needles)
    path = tmp_path / "m.onnx"
    onnx.save(_two_op_model(), path)
    out = tmp_path / "out"
    proc = run_tool("compile", [str(path), "-o", str(out), "--policy", spec])
    assert_clean_cli_error(proc, *needles)
    assert_nothing_written(out)


def test_failing_policy_from_config_options(policy_dir: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"policy": "hostile_policies:BadInit",
                               "policy_options": {"threshold": 3}}))  # fmt: skip
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(_two_op_model(), config=cfg)
    assert_clean_api_error(ei, "BadInit.__init__(threshold=3)", "no licence file")
    path = tmp_path / "m.onnx"
    onnx.save(_two_op_model(), path)
    proc = run_tool("bench", [str(path), "--config", str(cfg), "--runs", "1"])
    assert_clean_cli_error(proc, "BadInit.__init__(threshold=3)")


# ---- items 7, 13b/c: autofusion-opt input, pipeline and pass-option errors ---------------


@pytest.fixture
def files(tmp_path: Path, relu_path: Path) -> dict[str, Path]:
    (tmp_path / "bad.mlir").write_bytes(b"\xff\xfe builtin.module {}")
    (tmp_path / "empty.mlir").write_text("")
    (tmp_path / "text.onnx").write_text("this is not a protobuf\n")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("x")
    data = relu_path.read_bytes()
    assert data.count(b"\x1a\x01r") == 1  # NodeProto.name = "r"
    (tmp_path / "badname.onnx").write_bytes(data.replace(b"\x1a\x01r", b"\x1a\x01\xff"))
    (tmp_path / "badtensor.onnx").write_bytes(data.replace(b"\n\x01x", b"\n\x01\xfe"))
    return {"relu": relu_path, **{p.stem if p.suffix else p.name: p
                                  for p in tmp_path.iterdir() if p != relu_path}}  # fmt: skip


OPT_CASES = [
    (["-p", "fuse{", "{relu}"], ["-p 'fuse{'", "bad pass pipeline at column 6"]),
    (["-p", "fuse{config=/x.json}", "{relu}"], ["bad pass pipeline", "quote string values"]),
    (["-p", "nosuch", "{relu}"], ["unknown pass 'nosuch'"]),
    (["-p", "fuze", "{relu}"], ["unknown pass 'fuze'", "did you mean fuse"]),
    (["-p", "fuse{bogus=1}", "{relu}"], ["pass 'fuse' has no option 'bogus'", "window_size"]),
    (["-p", "convert-nn-to-buffers{x=1}", "{relu}"], ["has no option 'x'", "no options"]),
    (["-p", "lower-fusion-to-ascendc{cores=abc}", "{relu}"], ["option cores=abc", "int"]),
    (["-p", "lower-nn-to-loops{fuse_epilogues=3}", "{relu}"], ["fuse_epilogues=3", "bool"]),
    (
        ["-p", "lower-fusion-to-ascendc{cores=0}", "{relu}"],
        ["'lower-fusion-to-ascendc'", "cores=0", "integer >= 1"],
    ),
    (["-p", "lower-fusion-to-ascendc{max-tile=0}", "{relu}"], ["max_tile=0", ">= 8"]),
    (["-p", "lower-fusion-to-ascendc{ub_bytes=-4}", "{relu}"], ["ub_bytes=-4"]),
    (["-p", "fuse{aggressiveness=7}", "{relu}"], ["aggressiveness=7", "-1..3"]),
    (["-p", "fuse{window_size=-2}", "{relu}"], ["window_size=-2", ">= -1"]),
    (["-p", "fuse{hardware=tpu}", "{relu}"], ["hardware='tpu'", "'ascend910b'"]),
    (["-p", "canonicalize-nn{fold_limit=-1}", "{relu}"], ["fold_limit=-1"]),
    (["-p", "plan-buffers{alignment=3}", "{relu}"], ["alignment=3", "power of two"]),
    (["-p", "tile-fusion{memory_limit_mb=-1}", "{relu}"], ["memory_limit_mb=-1"]),
    (["-t", "unknown", "{relu}"], ["invalid choice: 'unknown'"]),
    (["--no-such-flag", "{relu}"], ["unrecognized arguments: --no-such-flag"]),
    (["{bad}"], ["bad.mlir: not UTF-8 text", "byte 0xff at offset 0"]),
    (["{empty}"], ["empty.mlir: empty input"]),
    (["{text}"], ["text.onnx: not a valid ONNX model"]),
    (["{a_dir}"], ["a_dir: is a directory"]),
    (["{a_file}"], ["a_file", "Unrecognized file extension"]),
    (["{tmp}/missing.onnx"], ["missing.onnx: no such file"]),
    (["-o", "{tmp}/no/such/dir/out.mlir", "{relu}"], ["-o", "does not exist"]),
    (["-o", "{a_file}/out.mlir", "{relu}"], ["-o", "does not exist"]),
    (["-o", "{a_dir}", "{relu}"], ["-o", "is a directory"]),
    (["{badname}"], ["badname.onnx: node #0 name b'\\xff' is not valid UTF-8"]),
    (["{badtensor}"], ["badtensor.onnx: graph input name b'\\xfe' is not valid UTF-8"]),
]


@pytest.mark.parametrize(("args", "needles"), OPT_CASES,
                         ids=[" ".join(a)[:40] for a, _ in OPT_CASES])  # fmt: skip
def test_opt_errors_are_one_clear_line(tmp_path: Path, files: dict[str, Path],
                                       args: list[str], needles: list[str]) -> None:  # fmt: skip
    subst = {k: str(v) for k, v in files.items()} | {"tmp": str(tmp_path)}
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run_tool("opt", [a.format(**subst) if a.startswith("{") or "{tmp}" in a else a
                            for a in args])  # fmt: skip
    assert_clean_cli_error(proc, *needles)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_opt_stdin_is_still_read(files: dict[str, Path]) -> None:
    proc = run_tool("opt", [], stdin="builtin.module {}\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "builtin.module" in proc.stdout.decode()
    assert_clean_cli_error(run_tool("opt", [], stdin=b"\xff"), "stdin: not UTF-8 text")


def test_non_utf8_names_through_the_api(files: dict[str, Path]) -> None:
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(files["badname"])
    assert_clean_api_error(ei, "badname.onnx", "not valid UTF-8")


def test_every_numeric_pass_option_has_a_range() -> None:
    """A new int/float pass option must say which values it accepts (passes/options.py)."""
    import dataclasses

    from autofusion.passes import get_all_passes
    from autofusion.passes.options import RANGES

    missing = []
    for name, factory in get_all_passes().items():
        cls = factory()
        if not cls.__module__.startswith("autofusion") or not dataclasses.is_dataclass(cls):
            continue
        for f in dataclasses.fields(cls):
            kind = str(f.type)
            if ("int" in kind or "float" in kind) and f.name not in RANGES.get(name, {}):
                missing.append(f"{name}.{f.name}")
    assert not missing, missing
    assert set(RANGES) <= set(get_all_passes())


def test_pass_option_ranges_apply_to_the_python_pipeline() -> None:
    from autofusion.passes.tile_fusion import TileFusion
    from autofusion.pipeline import make_pass

    with pytest.raises(AutofusionError) as ei:
        make_pass(TileFusion, {"memory_limit_mb": math.nan})
    assert_clean_api_error(ei, "'tile-fusion'", "memory_limit_mb=nan")


def test_pass_built_in_python_checks_its_options() -> None:
    """A pass constructed directly (not through -p or the pipeline) is range-checked too:
    ``LowerFusionToAscendC(cores=0)`` used to reach a division by zero when applied."""
    from autofusion.lowering.ascendc.lower import LowerFusionToAscendC
    from autofusion.passes import get_all_passes

    with pytest.raises(AutofusionError) as ei:
        LowerFusionToAscendC(cores=0)
    assert_clean_api_error(ei, "'lower-fusion-to-ascendc'", "cores=0", ">= 1")
    for factory in get_all_passes().values():  # every default is in range
        factory()()


# ---- the CLIs' own options and files ---------------------------------------------------

COMPILE_CASES = [
    (["{relu}", "--threads", "0"], ["--threads", "positive integer", "'0'"]),
    (["{relu}", "--threads", "x"], ["--threads"]),
    (["{relu}", "--memory-limit", "abc"], ["--memory-limit", "'abc'"]),
    (["{relu}", "--memory-limit", "nan"], ["--memory-limit", "'nan'"]),
    (["{relu}", "--memory-limit", "inf"], ["--memory-limit", "'inf'"]),
    (["{relu}", "--memory-limit", "-5"], ["--memory-limit"]),
    (["zoo:nope"], ["unknown zoo model 'nope'"]),
    (["{text}"], ["text.onnx: not a valid ONNX model"]),
    (["{tmp}/missing.onnx"], ["missing.onnx: no such file"]),
    (["{a_dir}"], ["a_dir: is a directory"]),
    (["{relu}", "--target", "gpu"], ["invalid choice: 'gpu'"]),
    (["{relu}", "--policy", "nocolon"], ["policy 'nocolon'"]),
    (["{relu}", "--config", "{tmp}/none.json"], ["none.json: no such config file"]),
    (["{relu}", "--report", "{tmp}/no/dir/r.json"], ["--report", "does not exist"]),
    (["{relu}", "--report", "{a_dir}"], ["--report", "is a directory"]),
    (["{relu}", "--report", "{tmp}/out/r.json"], ["--report", "inside the output folder"]),
    (["{relu}", "--memory-plot", "{a_file}/p.svg"], ["--memory-plot", "does not exist"]),
]


@pytest.mark.parametrize(("args", "needles"), COMPILE_CASES,
                         ids=[" ".join(a)[:40] for a, _ in COMPILE_CASES])  # fmt: skip
def test_compile_errors_are_one_clear_line(
    tmp_path: Path, files: dict[str, Path], args: list[str], needles: list[str]
) -> None:
    subst = {k: str(v) for k, v in files.items()} | {"tmp": str(tmp_path)}
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run_tool("compile", [*(a.format(**subst) for a in args), "-o", str(out)])
    assert_clean_cli_error(proc, *needles)
    assert_nothing_written(out)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_compile_output_under_a_file(tmp_path: Path, files: dict[str, Path]) -> None:
    """-o's missing parent folders are created, but not below a file."""
    for out in (files["a_file"] / "out", files["a_file"] / "deeper" / "out", files["a_file"]):
        proc = run_tool("compile", [str(files["relu"]), "-o", str(out)])
        assert_clean_cli_error(proc, "a_file", "not a directory")
    assert files["a_file"].read_text() == "x"


BENCH_CASES = [
    (["{relu}", "--runs", "-1"], ["--runs", "'-1'"]),
    (["{relu}", "--runs", "0"], ["--runs", "'0'"]),
    (["{relu}", "--threads", "0"], ["--threads"]),
    (["{relu}", "--memory-limit", "nan"], ["--memory-limit"]),
    (["{relu}", "--profile", "-1"], ["--profile"]),
    (["zoo:nope"], ["unknown zoo model 'nope'"]),
    (["{text}"], ["text.onnx: not a valid ONNX model"]),
    (["{tmp}/missing.onnx"], ["missing.onnx: no such file"]),
    (["{a_dir}"], ["a_dir: is a directory"]),
]


@pytest.mark.parametrize(("args", "needles"), BENCH_CASES,
                         ids=[" ".join(a)[:40] for a, _ in BENCH_CASES])  # fmt: skip
def test_bench_errors_are_one_clear_line(tmp_path: Path, files: dict[str, Path],
                                         args: list[str], needles: list[str]) -> None:  # fmt: skip
    subst = {k: str(v) for k, v in files.items()} | {"tmp": str(tmp_path)}
    proc = run_tool("bench", [a.format(**subst) for a in args])
    assert_clean_cli_error(proc, *needles)
    assert proc.stdout == b""
