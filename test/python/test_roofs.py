"""The profiler's roofs (``autofusion.runtime.roofs``): measured once per machine, cached,
overridable from the environment; the ridge decides compute- or memory-bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autofusion.errors import AutofusionError
from autofusion.runtime import roofs


def test_measured_once_then_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(roofs.ENV_PEAK, raising=False)
    monkeypatch.delenv(roofs.ENV_BANDWIDTH, raising=False)
    monkeypatch.setattr(roofs, "GEMM_N", 128)  # the same measurement, smaller and quicker
    first = roofs.machine_roofs(1)
    assert first.source == "measured"
    # a real GEMM on a real core: well above 0.1 GFLOP/s; copy bandwidth likewise
    assert 0.1 < first.peak_gflops < 1e5
    assert 0.1 < first.dram_gbs < 1e4
    stored = json.loads((tmp_path / roofs.ROOFS_FILE).read_text())
    assert roofs.roof_key(1) in stored

    def fail(*_a: object, **_k: object) -> float:
        raise AssertionError("measured again")

    monkeypatch.setattr(roofs, "measure_sgemm_gflops", fail)
    again = roofs.machine_roofs(1)
    assert (again.peak_gflops, again.dram_gbs, again.source) == (
        first.peak_gflops, first.dram_gbs, "cached")  # fmt: skip
    # a damaged file is measured again, not an error
    (tmp_path / roofs.ROOFS_FILE).write_text("{not json")
    with pytest.raises(AssertionError, match="measured again"):
        roofs.machine_roofs(1)


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(roofs.ENV_PEAK, "200")
    monkeypatch.setenv(roofs.ENV_BANDWIDTH, "20")
    r = roofs.machine_roofs(2)
    assert (r.peak_gflops, r.dram_gbs, r.ridge, r.source) == (200.0, 20.0, 10.0, "environment")
    assert not (tmp_path / roofs.ROOFS_FILE).exists()  # nothing measured
    assert r.bound(9.9) == "memory"
    assert r.bound(10.0) == "compute"
    assert r.attainable_gflops(2.0) == 40.0
    assert r.attainable_gflops(50.0) == 200.0
    for bad in ("fast", "0", "-3", "nan", "inf"):
        monkeypatch.setenv(roofs.ENV_PEAK, bad)
        with pytest.raises(AutofusionError, match="AUTOFUSION_PEAK_GFLOPS"):
            roofs.machine_roofs(1)


def test_more_threads_never_lower_the_roof(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-thread reading below the 1-thread roof (a preempted measurement) is measured
    once more and floored at the 1-thread roof; a cached one like it is not trusted."""
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(roofs.ENV_PEAK, raising=False)
    monkeypatch.delenv(roofs.ENV_BANDWIDTH, raising=False)
    import autofusion.analysis.hardware as hw

    monkeypatch.setattr(hw, "measure_copy_bandwidth", lambda: 20e9)
    readings = {1: [180.0], 2: [150.0, 140.0, 350.0]}
    calls: list[int] = []

    def fake(threads: int, cpu: str = "native", say: object = None) -> float:
        calls.append(threads)
        return readings[threads].pop(0)

    monkeypatch.setattr(roofs, "measure_sgemm_gflops", fake)
    two = roofs.machine_roofs(2)
    assert two.peak_gflops == 180.0  # 150 and 140 read, floored at the 1-thread 180
    assert calls == [1, 2, 2]
    # the stored 2-thread figure equals the floor, so it is trusted from now on
    assert roofs.machine_roofs(2).source == "cached"
    # a cached 2-thread entry below the 1-thread one is measured again
    roofs.record_roofs(2, "native", 100.0, 20.0)
    assert roofs.machine_roofs(2).peak_gflops == 350.0
