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
