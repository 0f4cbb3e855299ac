"""The policy layer: config validation, blacklist / aggressiveness / user policies changing
the fusion report as documented (docs/fusion.md), cost refusals and whitelists."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.parser import Parser

from autofusion import zoo
from autofusion.dialects.fusion import Fusion
from autofusion.dialects.nn import NN
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx
from autofusion.passes import get_all_passes
from autofusion.policy import BasePolicy, OpView, config_from_dict, load_config, register_policy
from autofusion.policy.report import build_report, summarize_module

PIPELINE = ("canonicalize-nn", "fold-batchnorm", "fuse-conv-bn-relu", "fuse")


def compile_report(model: str = "tiny_cnn", **options: object) -> dict:
    module = import_onnx(zoo.get_model(model))
    before = build_report(module)["kernels_before"]
    for p in PIPELINE:
        cls = get_all_passes()[p]()
        fields = {k: v for k, v in options.items() if k in cls.__dataclass_fields__}
        cls(**fields).apply(Context(), module)  # type: ignore[arg-type]
    module.verify()
    report = build_report(module, kernels_before=before)
    json.dumps(report)  # JSON-serialisable
    return report


def write(tmp: Path, name: str, data: object) -> str:
    p = tmp / name
    p.write_text(json.dumps(data) if name.endswith(".json") else str(data))
    return str(p)


# ---- configuration ----------------------------------------------------------------------


def test_unknown_key_names_key_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", {"aggressivness": 2})
    with pytest.raises(AutofusionError, match=r"bad\.json: unknown config key 'aggressivness'"):
        load_config(path)


def test_concat_inplace_takes_true_false_or_auto(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "d.json", {})).concat_inplace == "auto"
    for value in (True, False, "auto"):
        assert load_config(write(tmp_path, "c.json", {"concat_inplace": value})).concat_inplace == (
            value
        )
    path = write(tmp_path, "bad.json", {"concat_inplace": "sometimes"})
    with pytest.raises(AutofusionError, match=r"bad\.json: 'concat_inplace' must be true, false"):
        load_config(path)


def test_yaml_config(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.yaml",
        "aggressiveness: 2\nblacklist: ['Conv->InstanceNorm']\n"
        "precision: {fp16_ops: [Conv], fp32_ops: [Softmax]}\n"
        "memory_limit_mb: 64\n",
    )
    cfg = load_config(path)
    assert cfg.aggressiveness == 2
    assert cfg.blacklist == (("Conv", "InstanceNormalization"),)
    assert cfg.precision == {"fp16_ops": ("Conv",), "fp32_ops": ("Softmax",)}
    assert cfg.memory_limit_mb == 64.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"aggressiveness": 4}, "'aggressiveness' must be an integer 0..3"),
        ({"blacklist": ["Conv"]}, "must name at least two op types"),
        ({"patterns": {"conv_bn_rleu": False}}, "unknown family 'conv_bn_rleu'"),
        ({"precision": {"fp16_ops": ["Conv"], "fp32_ops": ["Conv"]}}, "both fp32_ops and fp16_ops"),
        ({"precision": {"int8_ops": []}}, "unknown config key 'precision.int8_ops'"),
        ({"hardware": "tpu"}, "'hardware' must be one of"),
        ({"memory_limit_mb": -1}, "'memory_limit_mb' must be a positive number"),
        ({"blacklist": ["Conv->Rleu"]}, r"not an ONNX op type \(did you mean Relu"),
        ({"whitelist": ["Matmul->Add"]}, "'Matmul', which is not an ONNX op type"),
        ({"blacklist": [{"patern": "Conv->Relu"}]}, "exactly one key, 'pattern'"),
        ({"blacklist": [{"pattern": 3}]}, "chain entries must be strings"),
        ({"blacklist": "Conv->Relu"}, "must be a list of 'A->B' chains"),
        ({"precision": {"fp16_ops": ["Cnov"]}}, r"'precision.fp16_ops': 'Cnov' is not an ONNX op"),
        ({"precision_config": {"fp8_ops": []}}, "unknown config key 'precision_config.fp8_ops'"),
        ({"precision": {}, "precision_config": {}}, "one key \\(two names\\)"),
    ],
)
def test_invalid_values(data: dict, message: str) -> None:
    with pytest.raises(AutofusionError, match=message):
        config_from_dict(data, "cfg.json")


def test_recipes_as_written() -> None:
    """The recipe forms users copy: chain objects, short spellings, ``precision_config``."""
    cfg = config_from_dict(
        {
            "blacklist": [
                {"pattern": "Conv->InstanceNorm"},
                "LayerNorm->Dropout",
                "MatMul->*->Gelu",
            ],
            "precision_config": {"fp32_ops": ["Softmax"], "fp16_ops": ["Conv"]},
        }
    )
    assert cfg.blacklist == (
        ("Conv", "InstanceNormalization"),
        ("LayerNormalization", "Dropout"),
        ("MatMul", "*", "Gelu"),
    )
    assert cfg.precision == {"fp32_ops": ("Softmax",), "fp16_ops": ("Conv",)}


def _ln_dropout_model() -> onnx.ModelProto:
    """Relu -> LayerNorm -> Dropout -> Add(., relu): LayerNorm+Add fuse at aggressiveness 2."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.uniform(0.7, 1.3, 8).astype(np.float32), "s"),
        numpy_helper.from_array(rng.normal(0, 0.1, 8).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("LayerNormalization", ["r", "s", "b"], ["l"], name="ln", axis=-1),
        helper.make_node("Dropout", ["l"], ["d"], name="drop"),
        helper.make_node("Add", ["d", "r"], ["z"], name="add"),
    ]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])
    z = helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2, 8])
    graph = helper.make_graph(nodes, "g", [x], [z], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _fusion_report(model: onnx.ModelProto, config: str) -> dict:
    module = import_onnx(model)
    for p in PIPELINE:
        cls = get_all_passes()[p]()
        args = {"config": config} if "config" in cls.__dataclass_fields__ else {}
        cls(**args).apply(Context(), module)  # type: ignore[arg-type]
    module.verify()
    return build_report(module)


def test_chain_through_a_removed_dropout_refuses_the_fusion(tmp_path: Path) -> None:
    """Dropout is gone after import; ``LayerNorm->Dropout`` still keeps LayerNorm apart from
    what read the Dropout (here the Add it would otherwise absorb)."""
    fused = _fusion_report(_ln_dropout_model(), write(tmp_path, "a.json", {"aggressiveness": 3}))
    assert any({"ln", "add"} <= set(g["origins"]) for g in fused["groups"]), fused["groups"]
    cfg = {"aggressiveness": 3, "blacklist": [{"pattern": "LayerNorm->Dropout"}]}
    r = _fusion_report(_ln_dropout_model(), write(tmp_path, "b.json", cfg))
    assert not any({"ln", "add"} <= set(g["origins"]) for g in r["groups"]), r["groups"]
    hits = [x for x in r["refusals"] if x["code"] == "blacklisted"]
    assert hits
    assert set(hits[0]["nodes"]) == {"ln", "add"}
    assert "LayerNormalization->Dropout" in hits[0]["reason"]


def test_env_aggressiveness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_AGGRESSIVENESS", "3")
    assert config_from_dict({}).aggressiveness == 3
    assert config_from_dict({"aggressiveness": 1}).aggressiveness == 1  # the file wins
    monkeypatch.setenv("AUTOFUSION_AGGRESSIVENESS", "x")
    with pytest.raises(AutofusionError, match="AUTOFUSION_AGGRESSIVENESS"):
        config_from_dict({})


# ---- the report changes as documented ---------------------------------------------------


def test_default_report() -> None:
    r = compile_report()
    assert r["kernels_after"] < r["kernels_before"]
    patterns = {g["pattern"] for g in r["groups"]}
    assert "conv_relu" in patterns
    for g in r["groups"]:
        assert g["origins"]
        assert g["estimated_bytes_saved"] > 0
    assert r["policy"]["aggressiveness"] == 1


def test_blacklist_keeps_chain_apart(tmp_path: Path) -> None:
    base = compile_report()
    cfg = write(tmp_path, "bl.json", {"blacklist": ["Conv->Relu"]})
    r = compile_report(config=cfg)
    assert not any(g["pattern"] == "conv_relu" for g in r["groups"])
    assert r["kernels_after"] > base["kernels_after"]
    codes = {x["code"] for x in r["refusals"]}
    assert "blacklisted" in codes
    assert all("Conv->Relu" in x["reason"] for x in r["refusals"] if x["code"] == "blacklisted")


def test_pattern_switch_disables_family(tmp_path: Path) -> None:
    cfg = write(tmp_path, "off.json", {"patterns": {"conv_bn_relu": False, "conv_epilogue": False}})
    r = compile_report(config=cfg)
    assert not any(g["pattern"].startswith("conv") for g in r["groups"])
    assert "disabled" in {x["code"] for x in r["refusals"]}


def test_aggressiveness_zero_fuses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    r = compile_report(aggressiveness=0)
    assert r["groups"] == []
    assert r["kernels_after"] == r["kernels_before"]
    assert {x["code"] for x in r["refusals"]} == {"aggressiveness"}
    monkeypatch.setenv("AUTOFUSION_AGGRESSIVENESS", "0")
    assert compile_report()["groups"] == []


class NoRelu(BasePolicy):
    """Refuses every fusion whose consumer is a Relu."""

    seen: list[tuple[str, str]]

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self.seen = []

    def should_fuse(self, producer: OpView, consumer: OpView) -> bool:
        self.seen.append((producer.op_type, consumer.op_type))
        return consumer.op_type != "Relu"


def test_custom_policy_instance_via_token() -> None:
    pol = NoRelu()
    r = compile_report(policy="@" + register_policy(pol))
    assert ("Conv", "Relu") in pol.seen
    assert not any("relu" in g["pattern"].split("_") for g in r["groups"])
    refused = [x for x in r["refusals"] if x["code"] == "policy"]
    assert refused
    assert all("NoRelu" in x["reason"] for x in refused)


def test_custom_policy_from_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_policies.py").write_text(
        "from autofusion.policy import BasePolicy\n"
        "class OnlyConv(BasePolicy):\n"
        "    def should_fuse(self, producer, consumer):\n"
        "        return producer.op_type == 'Conv' and consumer.shape[1] <= self.options['max_c']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = write(
        tmp_path, "p.json", {"policy": "my_policies:OnlyConv", "policy_options": {"max_c": 8}}
    )
    r = compile_report(config=cfg)
    wide = compile_report(
        policy="my_policies:OnlyConv",
        config=write(tmp_path, "q.json", {"policy_options": {"max_c": 4096}}),
    )
    assert len(wide["groups"]) > len(r["groups"])
    assert "policy" in {x["code"] for x in r["refusals"]}


def test_bad_policy_spec() -> None:
    with pytest.raises(AutofusionError, match="expected 'module:Class' or '@token'"):
        compile_report(policy="nonsense")
    with pytest.raises(AutofusionError, match="no policy registered"):
        compile_report(policy="@nope")


# ---- cost refusals, whitelist and aggressiveness 3 --------------------------------------

T = "tensor<64x1024xf32>"
WIDE_CHAIN = (
    f"func.func @main(%a: {T}, %b: {T}, %c: {T}, %d: {T}, %e: {T}) -> {T} {{\n"
    + "".join(
        f'  %{i} = nn.{op} {x}, {y} {{onnx.origins = ["{op}{i}"]}} : ({T}, {T}) -> {T}\n'
        for i, (op, x, y) in enumerate(
            [("add", "%a", "%b"), ("add", "%0", "%c"), ("add", "%1", "%d"), ("mul", "%2", "%e")]
        )
    )
    + f"  func.return %3 : {T}\n}}\n"
)


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for d in (NN, Fusion):
        ctx.load_dialect(d)
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    return Parser(ctx, text).parse_module()


def fuse_text(**options: object) -> dict:
    module = parse(WIDE_CHAIN)
    get_all_passes()["fuse"]()(**options).apply(Context(), module)  # type: ignore[call-arg]
    module.verify()
    return build_report(module)


def test_cost_refuses_when_the_working_set_exceeds_the_unified_buffer(tmp_path: Path) -> None:
    cpu = fuse_text()
    assert len(cpu["groups"]) == 1
    assert cpu["groups"][0]["ops"] == 4
    npu = fuse_text(hardware="ascend910b")  # 192 KB UB
    assert any(x["code"] == "cost" and "working set" in x["reason"] for x in npu["refusals"])
    assert max(g["ops"] for g in npu["groups"]) < 4
    forced = fuse_text(hardware="ascend910b", aggressiveness=3)
    assert forced["groups"][0]["ops"] == 4
    assert not forced["refusals"]
    cfg = write(tmp_path, "wl.json", {"whitelist": ["Add->Mul"], "hardware": "ascend910b"})
    wl = fuse_text(config=cfg)
    assert any(g["origins"][-1] == "mul3" and g["ops"] >= 2 for g in wl["groups"])


def test_report_reads_memory_fields_and_summary() -> None:
    module = import_onnx(zoo.get_model("tiny_cnn"))
    for p in PIPELINE:
        get_all_passes()[p]()().apply(Context(), module)
    main = next(iter(module.ops))
    main.attributes["memory.arena_bytes"] = IntegerAttr(1024, i64)
    main.attributes["memory.naive_bytes"] = IntegerAttr(4096, i64)
    r = build_report(module)
    assert r["arena_bytes"] == 1024
    assert r["naive_bytes"] == 4096
    text = summarize_module(module)
    assert "conv_relu" in text
    assert "arena_bytes: 1024" in text


def test_hardware_descriptions() -> None:
    from autofusion.analysis.hardware import ASCEND_910B, hardware_for

    cpu = hardware_for("cpu")
    assert cpu.fused_cache_bytes >= 256 * 1024  # an L2, read from sysfs or the recorded value
    assert ASCEND_910B.fused_cache_bytes == 192 * 1024
    assert cpu.ridge_flops_per_byte > 1.0
    with pytest.raises(AutofusionError, match="unknown hardware 'gpu'"):
        hardware_for("gpu")


def test_materialize_switch_gives_multi_consumer_refusal(tmp_path: Path) -> None:
    t = "tensor<8x8xf32>"
    text = (
        f"func.func @main(%x: {t}) -> ({t}, {t}) {{\n"
        f'  %a = nn.relu %x {{onnx.origins = ["relu"]}} : ({t}) -> {t}\n'
        f'  %b = nn.tanh %a {{onnx.origins = ["tanh"]}} : ({t}) -> {t}\n'
        f"  func.return %a, %b : {t}, {t}\n}}\n"
    )
    cfg = write(tmp_path, "m.json", {"patterns": {"materialize": False}})
    for options, fused in (({}, True), ({"config": cfg}, False)):
        module = parse(text)
        get_all_passes()["fuse"]()(**options).apply(Context(), module)  # type: ignore[arg-type]
        r = build_report(module)
        assert bool(r["groups"]) is fused
    assert [x["code"] for x in r["refusals"]] == ["multi-consumer"]
    assert "materialize is disabled" in r["refusals"][0]["reason"]
