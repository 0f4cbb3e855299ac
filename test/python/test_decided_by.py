"""``decided_by`` in the fusion report: every group and every refusal names the layer
(structure / cost / rules / learned / policy) that made the decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from autofusion.dialects.fusion import Fusion
from autofusion.dialects.nn import NN
from autofusion.passes import get_all_passes
from autofusion.policy import BasePolicy, OpView, register_policy
from autofusion.policy.reasons import LAYER_OF_CODE, LAYERS, REASON_CODES, Refusal, group_layer
from autofusion.policy.report import build_report, summarize_report

T = "tensor<64x1024xf32>"
# four elementwise joins on 256 KiB tensors: fits L2 on the CPU, not the 192 KB UB of Ascend
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
# a relu whose result broadcasts into an add of a larger shape: a legality refusal
BROADCAST = (
    "func.func @main(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {\n"
    '  %r = nn.relu %x {onnx.origins = ["relu"]} : (tensor<4xf32>) -> tensor<4xf32>\n'
    '  %s = nn.add %y, %r {onnx.origins = ["add"]} : (tensor<3x4xf32>, tensor<4xf32>) '
    "-> tensor<3x4xf32>\n"
    "  func.return %s : tensor<3x4xf32>\n}\n"
)


def parse(text: str) -> ModuleOp:
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context()
    for d in (NN, Fusion, Builtin, Func):
        ctx.load_dialect(d)
    return Parser(ctx, text).parse_module()


def fuse(text: str, **options: object) -> dict:
    module = parse(text)
    get_all_passes()["fuse"]()(**options).apply(Context(), module)  # type: ignore[call-arg]
    module.verify()
    report = build_report(module)
    json.dumps(report)
    return report


def write(tmp: Path, name: str, data: object) -> str:
    p = tmp / name
    p.write_text(json.dumps(data))
    return str(p)


def layers(report: dict) -> tuple[set[str], set[str]]:
    return {g["decided_by"] for g in report["groups"]}, {
        r["decided_by"] for r in report["refusals"]
    }


def test_every_code_has_a_layer() -> None:
    assert set(LAYER_OF_CODE) == set(REASON_CODES)
    assert set(LAYER_OF_CODE.values()) <= set(LAYERS)
    with pytest.raises(ValueError, match="unknown decision layer"):
        Refusal("cost", "x", (), "oracle")
    assert group_layer(["rules", "cost"]) == "cost"
    assert group_layer(["rules", "learned", "cost"]) == "learned"
    assert group_layer([]) == "structure"


def test_structure_refusal() -> None:
    r = fuse(BROADCAST)
    assert [(x["code"], x["decided_by"]) for x in r["refusals"]] == [
        ("shape-mismatch", "structure")
    ]


def test_cost_group_and_cost_refusal() -> None:
    cpu = fuse(WIDE_CHAIN)
    assert [(g["ops"], g["decided_by"]) for g in cpu["groups"]] == [(4, "cost")]
    npu = fuse(WIDE_CHAIN, hardware="ascend910b")  # 192 KB UB: the cost layer refuses
    refused = [x for x in npu["refusals"] if x["code"] == "cost"]
    assert refused
    assert {x["decided_by"] for x in refused} == {"cost"}
    assert "cost" in summarize_report(npu)


def test_rules_group_and_rules_refusal(tmp_path: Path) -> None:
    # aggressiveness 3 bypasses the cost model: the rules decided the group
    forced = fuse(WIDE_CHAIN, hardware="ascend910b", aggressiveness=3)
    assert layers(forced) == ({"rules"}, set())
    bl = write(tmp_path, "bl.json", {"blacklist": ["Add->Mul"]})
    r = fuse(WIDE_CHAIN, config=bl)
    assert [(x["code"], x["decided_by"]) for x in r["refusals"]] == [("blacklisted", "rules")]
    assert {g["decided_by"] for g in r["groups"]} == {"cost"}
    # materialise switched off: the multi-consumer refusal comes from the rules
    t = "tensor<8x8xf32>"
    text = (
        f"func.func @main(%x: {t}) -> ({t}, {t}) {{\n"
        f'  %a = nn.relu %x {{onnx.origins = ["relu"]}} : ({t}) -> {t}\n'
        f'  %b = nn.tanh %a {{onnx.origins = ["tanh"]}} : ({t}) -> {t}\n'
        f"  func.return %a, %b : {t}, {t}\n}}\n"
    )
    off = fuse(text, config=write(tmp_path, "m.json", {"patterns": {"materialize": False}}))
    assert [(x["code"], x["decided_by"]) for x in off["refusals"]] == [("multi-consumer", "rules")]


class NoMul(BasePolicy):
    def should_fuse(self, producer: OpView, consumer: OpView) -> bool:
        return consumer.op_type != "Mul"


def test_policy_refusal_and_policy_group(tmp_path: Path) -> None:
    tok = "@" + register_policy(NoMul())
    r = fuse(WIDE_CHAIN, policy=tok)
    assert [(x["code"], x["decided_by"]) for x in r["refusals"]] == [("policy", "policy")]
    # the cost model still had the last word on the joins the policy allowed
    assert {g["decided_by"] for g in r["groups"]} == {"cost"}
    # with the cost model bypassed, the user policy's yes decided
    forced = fuse(WIDE_CHAIN, policy="@" + register_policy(BasePolicy()), aggressiveness=3)
    assert {g["decided_by"] for g in forced["groups"]} == {"policy"}


def test_refusal_layer_survives_the_ir_round_trip() -> None:
    import io

    from xdsl.printer import Printer

    module = parse(BROADCAST)
    get_all_passes()["fuse"]()().apply(Context(), module)
    buf = io.StringIO()
    Printer(stream=buf).print_op(module)
    text = buf.getvalue()
    assert 'decided_by = "structure"' in text
    assert build_report(parse(text))["refusals"][0]["decided_by"] == "structure"


def test_every_group_of_a_zoo_model_names_its_layer() -> None:
    from autofusion import zoo
    from autofusion.frontend.onnx_import import import_onnx

    module = import_onnx(zoo.get_model("tiny_cnn"))
    for p in ("canonicalize-nn", "fold-batchnorm", "fuse-conv-bn-relu", "fuse"):
        get_all_passes()[p]()().apply(Context(), module)
    r = build_report(module)
    assert r["groups"]
    assert {g["decided_by"] for g in r["groups"]} == {"cost"}
    assert all(x["decided_by"] in LAYERS for x in r["refusals"])
