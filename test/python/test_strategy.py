"""The strategy layer's learned half (``strategy: rules | learned | hybrid``): the config key,
who decides (``decided_by: learned``), refusals by the model, candidate ranking, and that
the committed artefact is what ``benchmarks/train_strategy.py --from-csv`` fits."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

from autofusion import testing
from autofusion.analysis.hardware import cpu_this_machine
from autofusion.analysis.predict import Roofs
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx
from autofusion.interpreter import run_module
from autofusion.passes import get_all_passes
from autofusion.policy import config_from_dict, learned
from autofusion.policy.report import build_report

ROOT = Path(__file__).resolve().parents[2]


def chain_model(n: int, rows: int = 64) -> onnx.ModelProto:
    """``n`` elementwise ops in a row (Add of a constant, Relu alternating) on a
    ``rows`` x 64 tensor: one cluster."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 64])
    c = numpy_helper.from_array(np.full([1], -0.01, dtype=np.float32), "c")
    names = ["x", *[f"t{i}" for i in range(n - 1)], "y"]
    nodes = [
        helper.make_node("Add", [names[i], "c"], [names[i + 1]], name=f"add{i}")
        if i % 2 == 0
        else helper.make_node("Relu", [names[i]], [names[i + 1]], name=f"relu{i}")
        for i in range(n)
    ]
    g = helper.make_graph(nodes, "chain", [x], [y], [c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def row_model() -> onnx.ModelProto:
    """relu -> softmax: at aggressiveness 2 a row epilogue join whose relu result is a
    buffer inside the kernel (softmax is a row loop)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["y"], name="sm", axis=-1)]  # fmt: skip
    g = helper.make_graph(nodes, "row", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def fuse(m: onnx.ModelProto, tmp: Path, **cfg: object) -> dict:
    path = tmp / "cfg.json"
    path.write_text(json.dumps(cfg))
    module = import_onnx(m)
    feeds = {"x": np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)}
    if m.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 8:
        feeds = {"x": feeds["x"][:8]}
    ref = run_module(module, feeds)
    get_all_passes()["fuse"]()(config=str(path)).apply(Context(), module)  # type: ignore[call-arg]
    module.verify()
    got = run_module(module, feeds)
    for k in ref:
        testing.assert_close(got[k], ref[k], k)
    return build_report(module)


def test_config_key() -> None:
    assert config_from_dict({}).strategy == "rules"
    assert config_from_dict({"strategy": "hybrid"}).strategy == "hybrid"
    with pytest.raises(AutofusionError, match="'strategy' must be one of rules, learned, hybrid"):
        config_from_dict({"strategy": "oracle"}, "c.json")


def test_hybrid_uses_the_model_only_for_large_clusters(tmp_path: Path) -> None:
    small = chain_model(6)
    assert {g["decided_by"] for g in fuse(small, tmp_path)["groups"]} == {"cost"}
    assert {g["decided_by"] for g in fuse(small, tmp_path, strategy="hybrid")["groups"]} == {"cost"}
    assert {g["decided_by"] for g in fuse(small, tmp_path, strategy="learned")["groups"]} == {
        "learned"
    }
    big = chain_model(learned.LEARNED_MIN_OPS + 5)
    r = fuse(big, tmp_path, strategy="hybrid")
    assert [g["ops"] for g in r["groups"]] == [learned.LEARNED_MIN_OPS + 5]
    assert [g["decided_by"] for g in r["groups"]] == ["learned"]
    assert fuse(big, tmp_path)["groups"][0]["decided_by"] == "cost"


def test_learned_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a model that charges a lot per materialised buffer refuses relu -> softmax (the relu
    # result becomes a buffer inside the kernel); the roofline rules fuse it
    coef = [1e-6, 0.0, 0.0, 0.0, 0.0, 1.0, 1e-3]
    strict = learned.LearnedModel(tuple(coef), Roofs.of(cpu_this_machine()), "test")
    monkeypatch.setattr(learned, "default_model", lambda: strict)
    rules = fuse(row_model(), tmp_path, aggressiveness=2)
    assert [g["origins"] for g in rules["groups"]] == [["relu", "sm"]]
    r = fuse(row_model(), tmp_path, aggressiveness=2, strategy="learned")
    assert r["groups"] == []
    assert [(x["code"], x["decided_by"], x["nodes"]) for x in r["refusals"]] == [
        ("cost", "learned", ["relu", "sm"])
    ]
    assert "learned kernel-time model" in r["refusals"][0]["reason"]


def test_rank_orders_candidates_by_predicted_saving(monkeypatch: pytest.MonkeyPatch) -> None:
    from autofusion.analysis.structure import Cluster
    from autofusion.passes.fuse import Decision
    from autofusion.policy.engine import FusionPolicy

    class Fake:
        def join_times(self, ops, consumer, hw):  # type: ignore[no-untyped-def]
            return (1.0, 1.0 + len(ops))  # bigger clusters save more

    monkeypatch.setattr(learned, "default_model", lambda: Fake())
    module = import_onnx(chain_model(4))
    ops = [o for o in next(iter(module.ops)).regions[0].block.ops if o.name.startswith("nn.")]
    ops = [o for o in ops if o.name != "nn.constant"]
    a, b = Cluster([ops[0]]), Cluster(ops[1:3])
    pol = FusionPolicy.resolve(None)
    rules = Decision(pol, cpu_this_machine())
    assert rules.rank(ops[3], [a, b]) == [0, 1]  # strategy rules: the structure order
    pol.config = config_from_dict({"strategy": "learned"})
    assert Decision(pol, cpu_this_machine()).rank(ops[3], [a, b]) == [1, 0]


def test_artefact_is_what_the_training_script_fits() -> None:
    script = ROOT / "benchmarks" / "train_strategy.py"
    spec = importlib.util.spec_from_file_location("train_strategy", script)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with (ROOT / "benchmarks" / "data" / "strategy_train.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 100
    fitted = mod.fit(rows)
    stored = json.loads(learned.MODEL_FILE.read_text())
    assert stored["features"] == list(learned.FEATURES)
    assert stored["coefficients"] == pytest.approx(fitted["coefficients"], rel=1e-9, abs=1e-18)
    assert all(c >= 0 for c in stored["coefficients"])
    model = learned.load_model()
    assert model.coefficients == tuple(stored["coefficients"])


def test_bad_artefact_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text('{"features": ["calls"], "coefficients": [1.0]}')
    with pytest.raises(AutofusionError, match=r"train_strategy\.py"):
        learned.load_model(bad)
    bad.write_text("not json")
    with pytest.raises(AutofusionError, match="cannot read the learned strategy model"):
        learned.load_model(bad)
