"""The compile cache: keys, atomic publish, and the pass pipeline the API builds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autofusion.pipeline import TENSOR_PASSES, PipelineOptions, pipeline_string, tensor_passes
from autofusion.runtime import cache


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(d))
    return d


def test_root_from_env(cache_dir: Path) -> None:
    assert cache.cache_root() == cache_dir and cache_dir.is_dir()


def test_key_depends_on_model_and_options() -> None:
    k = cache.cache_key(b"model", {"fusion": True})
    assert k == cache.cache_key(b"model", {"fusion": True})
    assert k != cache.cache_key(b"model2", {"fusion": True})
    assert k != cache.cache_key(b"model", {"fusion": False})
    assert len(k) == 32 and all(c in "0123456789abcdef" for c in k)


def _stage(content: str) -> Path:
    d = cache.staging_dir()
    (d / "libmodel.so").write_text(content)
    return d


def test_publish_is_atomic_and_first_wins() -> None:
    assert cache.lookup("k1") is None
    first = _stage("first")
    entry = cache.publish(first, "k1")
    assert cache.lookup("k1") == entry and not first.exists()
    second = _stage("second")
    again = cache.publish(second, "k1")  # a concurrent builder lost the race
    assert again == entry and (entry / "libmodel.so").read_text() == "first"
    assert not second.exists()


def test_incomplete_entry_is_replaced() -> None:
    stale = cache.cache_root() / "k2"
    stale.mkdir()
    (stale / "model.c").write_text("half-written")
    assert cache.lookup("k2") is None  # no libmodel.so: not complete
    entry = cache.publish(_stage("new"), "k2")
    assert (entry / "libmodel.so").read_text() == "new"
    assert not (entry / "model.c").exists()


def test_publish_dir_replaces_only_when_complete(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    cache.publish_dir(_stage("x"), dest)
    assert (dest / "libmodel.so").read_text() == "x" and not (dest / "old.txt").exists()
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".out")]
    assert leftovers == []


def test_pipeline_order_follows_the_table() -> None:
    names = [p.name for p in tensor_passes(PipelineOptions())]
    order = [n for n, _ in TENSOR_PASSES]
    assert names == sorted(names, key=order.index)
    assert "tile-fusion" not in names  # only with a memory limit


def test_no_fusion_drops_fusion_passes() -> None:
    fused = {p.name for p in tensor_passes(PipelineOptions())}
    plain = {p.name for p in tensor_passes(PipelineOptions(fusion=False))}
    fusion_names = {n for n, g in TENSOR_PASSES if g == "fusion"}
    assert not plain & fusion_names
    assert plain <= fused


def test_memory_limit_reaches_tile_fusion() -> None:
    from autofusion.passes import get_all_passes

    if "tile-fusion" not in get_all_passes():
        pytest.skip("tile-fusion not registered")  # pragma: no cover
    text = pipeline_string(PipelineOptions(memory_limit_mb=64), include_lowering=False)
    assert "tile-fusion{" in text and "64" in text
