"""The compile cache: keys, atomic publish, size limit and LRU eviction, and the pass pipeline
the API builds."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from autofusion.errors import AutofusionError
from autofusion.pipeline import TENSOR_PASSES, Pipeline, PipelineOptions, pipeline_string
from autofusion.runtime import cache


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(d))
    return d


def test_root_from_env(cache_dir: Path) -> None:
    assert cache.cache_root() == cache_dir
    assert cache_dir.is_dir()


def test_key_depends_on_model_and_options() -> None:
    k = cache.cache_key(b"model", {"fusion": True})
    assert k == cache.cache_key(b"model", {"fusion": True})
    assert k != cache.cache_key(b"model2", {"fusion": True})
    assert k != cache.cache_key(b"model", {"fusion": False})
    assert len(k) == 32
    assert all(c in "0123456789abcdef" for c in k)


def _stage(content: str) -> Path:
    d = cache.staging_dir()
    (d / "libmodel.so").write_text(content)
    return d


def test_publish_is_atomic_and_first_wins() -> None:
    assert cache.lookup("k1") is None
    first = _stage("first")
    entry = cache.publish(first, "k1")
    assert cache.lookup("k1") == entry
    assert not first.exists()
    second = _stage("second")
    again = cache.publish(second, "k1")  # a concurrent builder lost the race
    assert again == entry
    assert (entry / "libmodel.so").read_text() == "first"
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
    assert (dest / "libmodel.so").read_text() == "x"
    assert not (dest / "old.txt").exists()
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith(".out")]
    assert leftovers == []


def test_pipeline_order_follows_the_table() -> None:
    names = Pipeline.from_options(PipelineOptions()).tensor().names
    order = [n for n, _ in TENSOR_PASSES]
    assert names == sorted(names, key=order.index)
    assert "tile-fusion" not in names  # only with a memory limit


def test_no_fusion_drops_fusion_passes() -> None:
    fused = set(Pipeline.from_options(PipelineOptions()).tensor().names)
    plain = set(Pipeline.from_options(PipelineOptions(fusion=False)).tensor().names)
    fusion_names = {n for n, g in TENSOR_PASSES if g == "fusion"}
    assert not plain & fusion_names
    assert plain <= fused


def test_memory_limit_reaches_tile_fusion() -> None:
    from autofusion.passes import get_all_passes

    if "tile-fusion" not in get_all_passes():
        pytest.skip("tile-fusion not registered")  # pragma: no cover
    text = pipeline_string(PipelineOptions(memory_limit_mb=64), include_lowering=False)
    assert "tile-fusion{" in text
    assert "64" in text


# ---- size limit and least-recently-used eviction --------------------------------------


def _entry(n: int, nbytes: int, age_s: float) -> tuple[str, Path]:
    """A complete fake entry of ``nbytes`` last used ``age_s`` seconds ago."""
    key = f"{n:032x}"
    d = cache.staging_dir()
    (d / "libmodel.so").write_bytes(b"\0" * nbytes)
    entry = cache.publish(d, key)
    _set_last_use(entry, age_s)
    return key, entry


def _bytes(entry: Path) -> int:
    """What an entry counts for the size limit (its files, manifest included)."""
    return sum(p.stat().st_size for p in entry.iterdir())


def _set_last_use(entry: Path, age_s: float) -> None:
    t = time.time() - age_s
    os.utime(entry / cache.USED_MARKER, (t, t))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 2048 * cache.MB), ("0", None), ("1.5", int(1.5 * cache.MB)), (" 64 ", 64 * cache.MB)],
)
def test_size_limit_from_env(monkeypatch: pytest.MonkeyPatch, value: str | None,
                             expected: int | None) -> None:  # fmt: skip
    if value is None:
        monkeypatch.delenv(cache.ENV_CACHE_MAX_MB, raising=False)
    else:
        monkeypatch.setenv(cache.ENV_CACHE_MAX_MB, value)
    assert cache.size_limit() == expected


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "inf", "2GB"])
def test_bad_size_limit_names_variable_and_value(monkeypatch: pytest.MonkeyPatch,
                                                 value: str) -> None:  # fmt: skip
    monkeypatch.setenv(cache.ENV_CACHE_MAX_MB, value)
    with pytest.raises(AutofusionError, match=rf"AUTOFUSION_CACHE_MAX_MB='{value}': expected"):
        cache.size_limit()
    with pytest.raises(AutofusionError, match="AUTOFUSION_CACHE_MAX_MB"):
        cache.prune()


def test_prune_evicts_least_recently_used_first() -> None:
    made = [_entry(i, 1000, age) for i, age in enumerate((300, 100, 200, 50))]
    keys = [k for k, _ in made]
    one = _bytes(made[0][1])  # all four are the same size: 1000 bytes plus the manifest
    assert cache.cache_size() == 4 * one
    assert [e[0].name for e in cache.entries()] == [keys[0], keys[2], keys[1], keys[3]]
    assert cache.prune(max_bytes=int(2.5 * one)) == (2, 2 * one)
    assert cache.lookup(keys[0]) is None
    assert cache.lookup(keys[2]) is None
    assert cache.lookup(keys[1]) is not None
    assert cache.lookup(keys[3]) is not None
    assert cache.cache_size() == 2 * one
    leftovers = [p.name for p in cache.cache_root().iterdir() if p.name.startswith(".")]
    assert leftovers == []  # evicted entries were renamed away, then removed entirely


def test_a_hit_protects_an_entry() -> None:
    old, entry = _entry(1, 1000, 300)
    newer, _ = _entry(2, 1000, 100)
    assert cache.lookup(old) == entry  # the hit makes it the most recently used
    assert cache.prune(max_bytes=int(1.5 * _bytes(entry))) == (1, _bytes(entry))
    assert cache.lookup(old) == entry
    assert cache.lookup(newer) is None


def test_kept_entry_survives_even_over_the_limit() -> None:
    keep, _ = _entry(1, 5000, 1000)  # oldest and bigger than the whole limit
    other, small = _entry(2, 10, 10)
    small_bytes = _bytes(small)
    assert cache.prune(max_bytes=100, keep=[keep]) == (1, small_bytes)
    assert cache.lookup(keep) is not None
    assert cache.lookup(other) is None


def test_no_limit_evicts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.ENV_CACHE_MAX_MB, "0")
    key, _ = _entry(1, 10_000, 10_000)
    assert cache.prune() == (0, 0)
    assert cache.lookup(key) is not None


def test_prune_sweeps_only_abandoned_build_dirs() -> None:
    fresh = cache.staging_dir()  # a build in progress: its owner lock is held
    (fresh / "model.c").write_text("int x;")
    day_ago = time.time() - 2 * cache.STALE_SECONDS
    os.utime(fresh, (day_ago, day_ago))  # even an old one is kept while its owner lives
    orphan = cache.staging_dir()
    cache.release_staging(orphan)  # what the kernel does when its process dies
    stale = cache.cache_root() / "tmp" / "build-old"  # an older autofusion's: no owner file
    stale.mkdir()
    os.utime(stale, (day_ago, day_ago))
    young = cache.cache_root() / "tmp" / "build-young"  # being created: no owner file yet
    young.mkdir()
    interrupted = cache.cache_root() / f"{cache.EVICT_PREFIX}deadbeef-1-2"
    interrupted.mkdir()
    (interrupted / "libmodel.so").write_bytes(b"x")
    other = cache.cache_root() / "ascendc-cpu"  # someone else's folder in the root
    other.mkdir()
    cache.prune(max_bytes=0)
    assert fresh.is_dir()
    assert (fresh / "model.c").exists()
    assert not orphan.exists()
    assert not stale.exists()
    assert young.is_dir()
    assert not interrupted.exists()
    assert other.is_dir()


def test_compile_evicts_old_builds_but_never_the_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import autofusion
    from autofusion.zoo import get_model, sample_inputs

    monkeypatch.setenv(cache.ENV_CACHE_MAX_MB, "0.01")  # 10 KB: smaller than any build
    first = autofusion.compile("zoo:tiny_cnn", threads=1)
    assert first.directory.is_dir()  # just built: kept although alone it is over the limit
    second = autofusion.compile("zoo:tiny_cnn", threads=2)
    assert not first.directory.exists()
    assert second.directory.is_dir()
    assert [e[0] for e in cache.entries()] == [second.directory]
    feeds = sample_inputs(get_model("tiny_cnn"))
    np.testing.assert_array_equal(first.run(feeds)["logits"], second.run(feeds)["logits"])


def test_compile_rejects_a_bad_limit_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    import autofusion

    monkeypatch.setenv(cache.ENV_CACHE_MAX_MB, "big")
    with pytest.raises(AutofusionError, match="AUTOFUSION_CACHE_MAX_MB='big'"):
        autofusion.compile("zoo:tiny_cnn", threads=1)
    assert not (cache.cache_root() / "tmp").exists()  # no build was started
