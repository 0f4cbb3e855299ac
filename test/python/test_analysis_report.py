"""``python -m autofusion.tools.analysis_report``: the structure and hardware printers, and the
layering rule that moved them out of ``autofusion/analysis/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autofusion.analysis import hardware
from autofusion.runtime import roofs
from autofusion.tools import analysis_report

ANALYSIS = Path(analysis_report.__file__).resolve().parents[1] / "analysis"


def test_structure_report_on_tiny_bert(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["structure", "zoo:tiny_bert", "--windows", "0,8,64", "--repeat", "1"]
    rc = analysis_report.main(argv)
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].startswith("zoo:tiny_bert: ")
    assert out[0].endswith(" top-level ops, aggressiveness 1")
    assert out[1].split() == ["window", "seconds", "kernels", "exact", "op-agree"]
    rows = [line.split() for line in out[2:]]
    assert [int(r[0]) for r in rows] == [0, 8, 64]
    for window, seconds, kernels, exact, op_agree in rows:
        assert float(seconds) >= 0
        assert int(kernels) > 0
        assert 0.0 <= float(exact) <= 1.0, window
        assert 0.0 <= float(op_agree) <= 1.0, window
    assert rows[0][3:] == ["1.000", "1.000"]  # the whole graph agrees with itself


def test_hardware_report_format(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    sizes: list[int] = []

    def fake_measure(nbytes: int = 64 * hardware.MiB, repeats: int = 5) -> float:
        sizes.append(nbytes)
        return 12.34e9

    monkeypatch.setattr(hardware, "measure_copy_bandwidth", fake_measure)
    monkeypatch.setattr(roofs, "measure_sgemm_gflops", lambda threads: 98.76)
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path))
    assert analysis_report.main(["hardware"]) == 0
    out = capsys.readouterr().out.splitlines()
    hw = hardware.cpu_this_machine()
    assert out == [
        f"L1d {hw.l1_bytes // 1024} KiB, L2 {hw.fused_cache_bytes // 1024} KiB",
        "copy bandwidth (64 MiB): 12.3 GB/s",
        "copy bandwidth (256 KiB): 12.3 GB/s",
        "sgemm 512^3, our GEMM core, 1 thread: 98.8 GFLOP/s",
    ]
    assert sizes == [64 * hardware.MiB, 256 * hardware.KiB]
    # stored as the profiler's one-thread roofs: the next profile reads them, measures nothing
    monkeypatch.delenv(roofs.ENV_PEAK, raising=False)
    monkeypatch.delenv(roofs.ENV_BANDWIDTH, raising=False)
    r = roofs.machine_roofs(1)
    assert (r.peak_gflops, r.dram_gbs, r.source) == (98.76, 12.34, "cached")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["structure", "zoo:nope"], "unknown zoo model 'nope'"),
        (["structure", "zoo:tiny_bert", "--windows", "8,x"], "comma-separated window sizes"),
        (["structure", "zoo:tiny_bert", "--repeat", "0"], "expected a positive integer"),
        ([], "required"),
    ],
)
def test_errors_are_one_line(argv: list[str], message: str,
                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    try:
        rc = analysis_report.main(argv)
    except SystemExit as e:  # argparse usage errors
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 1
    assert message in err
    assert "Traceback" not in err


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _has_main_block(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
        and isinstance(n.test.left, ast.Name) and n.test.left.id == "__name__"
        for n in tree.body
    )  # fmt: skip


def test_analysis_layer_does_not_depend_on_passes_or_tools() -> None:
    files = sorted(ANALYSIS.glob("*.py"))
    assert any(f.name == "structure.py" for f in files)
    bad = []
    for f in files:
        tree = ast.parse(f.read_text(), str(f))
        for name in _imports(tree):
            if name.split(".")[:2] in (["autofusion", "passes"], ["autofusion", "tools"],
                                       ["autofusion", "api"]):  # fmt: skip
                bad.append(f"{f.name} imports {name}")
        if _has_main_block(tree):
            bad.append(f"{f.name} has a __main__ block")
    assert not bad, bad
