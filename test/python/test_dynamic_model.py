"""The shape-specialising model (issue 12, items 4-5 as far as this session goes):
``autofusion.compile()`` of a model with unpinned dynamic dims returns a model whose ``run``
accepts any in-range shape, compiling one specialisation per shape (the on-disk cache keyed
with the pinned shapes) and keeping the most recent ones loaded in an LRU.

Numerics: the dynamic-axis BERT fixtures against onnxruntime at several sequence lengths
(the project's bar). The LRU's counters are checked exactly on a tiny model, with both
config keys (``size``, ``enabled``); every bad feed is one clear error that compiles nothing.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hostile import assert_clean_api_error
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.api import CompiledModel
from autofusion.dynamic import DynamicModel
from autofusion.errors import AutofusionError
from autofusion.testing import assert_close

DATA = Path(__file__).resolve().parent / "data" / "exported"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
DYNAMIC_BERTS = sorted(n for n, e in MANIFEST.items() if e["dynamic"] and e["model"] == "bert")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an empty compile cache, so disk hits are counted exactly."""
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path / "cache"))


def _ort(model: Path | onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    src = str(model) if isinstance(model, Path) else model.SerializeToString()
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _max_positions(path: Path) -> int:
    proto = onnx.load(str(path), load_external_data=False)
    (t,) = [t for t in proto.graph.initializer if "position_embeddings" in t.name]
    return int(t.dims[0])


def _bert_feeds(batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 4 :] = 0  # padding at the end
    return {
        "input_ids": rng.integers(0, 100, (batch, seq)).astype(np.int64),
        "attention_mask": mask,
        "token_type_ids": np.broadcast_to(np.arange(seq) >= seq // 2, (batch, seq)).astype(
            np.int64
        ),
    }


@pytest.mark.parametrize("name", DYNAMIC_BERTS)
def test_dynamic_bert_compiles_once_and_matches_at_every_length(name: str) -> None:
    path = DATA / MANIFEST[name]["files"][0]
    top = _max_positions(path)
    m = autofusion.compile(path, threads=1)
    assert isinstance(m, DynamicModel)
    ids = next(s for s in m.inputs if s.name == "input_ids")
    batch_dynamic = isinstance(ids.shape[0], str)  # a dynamic-batch fixture varies it too
    shapes = [(1, 8), (2 if batch_dynamic else 1, 16), (1, top), (1, 8)]
    try:
        for i, (batch, seq) in enumerate(shapes):
            feeds = _bert_feeds(batch, seq, seed=i)
            got, ref = m.run(feeds), _ort(path, feeds)
            assert set(got) == set(ref)
            for out, want in ref.items():
                assert 0.1 <= float(np.abs(want).max()) <= 10, out
                assert_close(got[out], want, f"{name} batch {batch} seq {seq}: {out}")
        cache = m.report["shape_cache"]
        assert (cache["misses"], cache["hits"], cache["size"], cache["evictions"]) == (3, 1, 3, 0)
        seq_sym = ids.shape[1]
        assert m.report["symbols"][seq_sym]["range"] == [1, 4096]  # the documented default
        assert [s["sizes"][seq_sym] for s in m.report["shapes"]] == [16, top, 8]
        assert all(s["report"]["kernels_after"] > 0 for s in m.report["shapes"])
    finally:
        m.close()


def _tiny(per_token_bias: bool = True) -> onnx.ModelProto:
    """z = Relu(x @ W + b): x [batch, seq, 8], b [batch, seq, 1] share both symbols (b is
    [batch, 1, 1] without ``per_token_bias``, so pinning it fixes batch only)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 8)) / np.sqrt(8)).astype(np.float32), "W")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    b_dims = ["batch", "seq" if per_token_bias else 1, 1]
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, b_dims)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "seq", 8])
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["s"]),
        helper.make_node("Relu", ["s"], ["z"]),
    ]
    graph = helper.make_graph(nodes, "tiny_dyn", [x, b], [z], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tiny_feeds(batch: int, seq: int, per_token_bias: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 100 + seq)
    return {
        "x": rng.standard_normal((batch, seq, 8)).astype(np.float32),
        "b": rng.standard_normal((batch, seq if per_token_bias else 1, 1)).astype(np.float32) + 1,
    }


def _config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "dyn.yaml"
    cfg.write_text(text)
    return cfg


def _cache(m: CompiledModel) -> tuple[int, int, int, int]:
    c = m.report["shape_cache"]
    return c["hits"], c["misses"], c["evictions"], c["size"]


def test_lru_of_size_two_counts_exactly(tmp_path: Path) -> None:
    model = _tiny()
    cfg = _config(tmp_path, "dynamic_shape_cache: {size: 2}\n")
    m = autofusion.compile(model, threads=1, config=cfg, cache=False)
    assert m.report["shape_cache"] == {"enabled": True, "capacity": 2, "size": 0, "hits": 0,
                                       "misses": 0, "evictions": 0, "disk_hits": 0}  # fmt: skip
    dirs: dict[int, Path] = {}
    expected = [  # seq -> (hits, misses, evictions, size) after the run
        (8, (0, 1, 0, 1)),
        (12, (0, 2, 0, 2)),
        (8, (1, 2, 0, 2)),
        (16, (1, 3, 1, 2)),  # evicts 12, the least recently used
        (12, (1, 4, 2, 2)),  # compiled again; evicts 8
        (16, (2, 4, 2, 2)),
    ]
    try:
        for seq, counts in expected:
            feeds = _tiny_feeds(1, seq)
            assert_close(m.run(feeds)["z"], _ort(model, feeds)["z"], f"seq {seq}")
            assert _cache(m) == counts, seq
            assert m.directory is not None
            dirs.setdefault(seq, m.directory)
        # the batch is a run-time batch of each specialisation (test_run_time_batch.py)
        assert [s["sizes"] for s in m.report["shapes"]] == [{"seq": 12}, {"seq": 16}]
        assert not dirs[8].exists()  # an evicted uncached build is closed and removed
    finally:
        m.close()
    assert not any(d.exists() for d in dirs.values())


def test_disabled_shape_cache_keeps_only_the_last_shape(tmp_path: Path) -> None:
    model = _tiny()
    on = autofusion.compile(model, threads=1)  # default: enabled, size 50
    off = autofusion.compile(
        model, threads=1, config=_config(tmp_path, "dynamic_shape_cache: {enabled: false}\n")
    )
    try:
        for seq in (8, 12, 8, 12):
            for m in (on, off):
                feeds = _tiny_feeds(1, seq)
                assert_close(m.run(feeds)["z"], _ort(model, feeds)["z"], f"seq {seq}")
        assert _cache(on) == (2, 2, 0, 2)
        assert _cache(off) == (0, 4, 3, 1)
        assert off.report["shape_cache"]["capacity"] == 1
        # `off` built 8 and 12 once each (its config differs, so the disk-cache keys do);
        # its two later misses were loads of those builds from the disk cache
        assert off.report["shape_cache"]["disk_hits"] == 2
        assert on.report["shape_cache"]["disk_hits"] == 0
    finally:
        on.close()
        off.close()


def test_report_before_and_after_the_first_run() -> None:
    m = autofusion.compile(_tiny(), threads=1, dynamic={"seq": (2, 64)})
    try:
        r = m.report
        assert r["dynamic"] is True
        assert r["kernels_after"] is None
        assert r["shapes"] == []
        assert r["symbols"]["seq"] == {"range": [2, 64], "origin": "dynamic=",
                                       "dims": ["x[1]", "b[1]"]}  # fmt: skip
        assert r["symbols"]["batch"]["origin"] == "default"
        json.dumps(r)
        m.run(_tiny_feeds(2, 5))
        r = m.report
        assert r["kernels_after"] >= 1
        assert r["shapes"][0]["input_shapes"] == {"x": ["batch", 5, 8], "b": ["batch", 5, 1]}
        assert r["shapes"][0]["report"]["kernels_after"] == r["kernels_after"]
        json.dumps(r)
        assert [s.name for s in m.inputs] == ["x", "b"]
        assert m.inputs[0].shape == ("batch", "seq", 8)
        assert m.output_names == ["z"]
    finally:
        m.close()
    with pytest.raises(AutofusionError, match="model was closed"):
        m.run(_tiny_feeds(2, 5))


@pytest.mark.parametrize(
    ("feeds", "needles"),
    [
        ({"x": np.zeros((1, 4, 8, 1), np.float32), "b": np.zeros((1, 4, 1), np.float32)},
         ["run(): input 'x' has rank 4", "declares rank 3: ['batch', 'seq', 8]"]),
        ({"x": np.zeros((1, 40, 8), np.float32), "b": np.zeros((1, 40, 1), np.float32)},
         ["input 'x' dim 1 (symbol 'seq') is 40", "outside its declared range 2..32 (dynamic=)"]),
        ({"x": np.zeros((1, 1, 8), np.float32), "b": np.zeros((1, 1, 1), np.float32)},
         ["symbol 'seq') is 1", "range 2..32"]),
        ({"x": np.zeros((1, 4, 8), np.float32), "b": np.zeros((1, 5, 1), np.float32)},
         ["inputs disagree on dimension 'seq'", "4 for input 'x', 5 for input 'b'"]),
        ({"x": np.zeros((1, 4, 7), np.float32), "b": np.zeros((1, 4, 1), np.float32)},
         ["input 'x' has size 7 in dim 2", "declares 8"]),
        ({"x": np.zeros((1, 4, 8), np.float64), "b": np.zeros((1, 4, 1), np.float32)},
         ["input 'x': expected dtype float32, got float64"]),
        ({"x": np.zeros((1, 4, 8), np.float32)}, ["missing input(s) 'b'"]),
        ({"x": np.zeros((1, 4, 8), np.float32), "b": np.zeros((1, 4, 1), np.float32),
          "c": np.zeros(1)}, ["names 'c', which are not graph inputs"]),
    ],
)  # fmt: skip
def test_bad_feeds_are_one_clear_error_and_compile_nothing(feeds: dict, needles: list[str]) -> None:
    m = autofusion.compile(_tiny(), threads=1, dynamic={"seq": (2, 32)}, label="tiny.onnx")
    try:
        with pytest.raises(AutofusionError) as e:
            m.run(feeds)
        assert_clean_api_error(e, "tiny.onnx: run()", *needles)
        assert _cache(m) == (0, 0, 0, 0)
    finally:
        m.close()


def test_config_range_and_pinned_symbol(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "dynamic: {seq: [1, 16]}\n")
    # pinning b [batch, 1, 1] fixes batch (= 2) in x too; seq stays free
    model = _tiny(per_token_bias=False)
    m = autofusion.compile(model, threads=1, config=cfg, input_shapes={"b": [2, 1, 1]})
    assert isinstance(m, DynamicModel)
    try:
        with pytest.raises(AutofusionError) as e:
            m.run(_tiny_feeds(2, 17, per_token_bias=False))
        assert_clean_api_error(e, "is 17", f"range 1..16 (config {cfg})")
        with pytest.raises(AutofusionError) as e:
            m.run(_tiny_feeds(3, 4, per_token_bias=False))
        assert_clean_api_error(e, "symbol 'batch') is 3", "input_shapes pinned 'batch' to 2")
        feeds = _tiny_feeds(2, 4, per_token_bias=False)
        assert_close(m.run(feeds)["z"], _ort(model, feeds)["z"], "pinned batch")
        assert m.report["symbols"]["batch"]["value"] == 2
    finally:
        m.close()
    with pytest.raises(AutofusionError) as e:
        autofusion.compile(_tiny(), config=_config(tmp_path, "dynamic: {sequence: [1, 16]}\n"))
    assert_clean_api_error(e, "declares a range for 'sequence'", "symbols: batch, seq")


def test_fully_pinned_model_is_an_ordinary_build() -> None:
    m = autofusion.compile(_tiny(), threads=1, input_shapes={"x": [1, 4, 8]})
    try:
        assert type(m) is CompiledModel
        assert m.report["symbols"]["seq"]["value"] == 4
    finally:
        m.close()


def test_threads_share_the_lru_and_evict_safely(tmp_path: Path) -> None:
    """Four threads alternate two shapes on a capacity-1 cache: specialisations are evicted
    while other threads may be running them, and every result is still right."""
    model = _tiny()
    refs = {seq: _ort(model, _tiny_feeds(1, seq))["z"] for seq in (6, 10)}
    cfg = _config(tmp_path, "dynamic_shape_cache: {size: 1}\n")
    m = autofusion.compile(model, threads=1, config=cfg)
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            for i in range(6):
                seq = (6, 10)[(first + i) % 2]
                assert_close(m.run(_tiny_feeds(1, seq))["z"], refs[seq], f"seq {seq}")
        except BaseException as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        hits, misses, evictions, size = _cache(m)
        assert hits + misses == 24
        assert size == 1
        assert evictions == misses - 1
    finally:
        m.close()


def test_zoo_bert_with_a_dynamic_sequence_axis_matches_at_long_lengths() -> None:
    """The zoo builder's dynamic_axes-style BERT (the benchmark's model) at lengths the
    exported fixtures' 32 positions cannot reach."""
    from autofusion.zoo.transformer import bert

    model = bert("tiny_bert", dynamic_seq=True)
    m = autofusion.compile(model, threads=1, dynamic={"seq": (1, 512)})
    try:
        for seq in (64, 384):
            feeds = _bert_feeds(1, seq, seed=seq)
            del feeds["token_type_ids"]  # the zoo BERT has none
            got, ref = m.run(feeds), _ort(model, feeds)
            for out, want in ref.items():
                assert 0.1 <= float(np.abs(want).max()) <= 10, out
                assert_close(got[out], want, f"seq {seq}: {out}")
    finally:
        m.close()
    with pytest.raises(ValueError, match=r"seq must be 1\.\.512"):
        bert("tiny_bert", seq=513)
