"""``--report-html``: the page renders in headless Chromium with the groups, refusals, memory
plan (and, from autofusion-bench, the per-kernel profile), model strings escaped.

Chromium comes from the install step (``.ci/install-cross-tools.sh``, apt package
``chromium``); when it is missing the fixture runs that step, and the tests skip only when it
cannot install it (no apt-get, not root).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.policy.html_report import Step, graph_svg
from autofusion.tools import bench
from autofusion.tools import compile as compile_cli

ROOT = Path(__file__).resolve().parents[2]
EVIL = "<script>alert(1)</script>"


def _find_browser() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    found = _find_browser()
    if found:
        return found
    step = subprocess.run(["sh", str(ROOT / ".ci" / "install-cross-tools.sh")],
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    found = _find_browser()
    if not found:
        pytest.skip("chromium is not installed and the install step could not install it: "
                    + (step.stdout.strip() or step.stderr.strip()))  # fmt: skip
    return found


def rendered_text(browser: str, page: Path) -> tuple[str, str]:
    """(the DOM Chromium built from ``page``, its visible text with tags stripped)."""
    with tempfile.TemporaryDirectory(prefix="af-chromium-") as profile:
        run = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    assert "<body>" in dom, dom[:500]
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    return dom, re.sub(r"\s+", " ", text)


def _model() -> onnx.ModelProto:
    """Conv -> Relu (refused by the config's blacklist), then an elementwise chain that fuses;
    one node carries a hostile name."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.2).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu_b"),
        helper.make_node("Sigmoid", ["r"], ["s"], name=EVIL),
        helper.make_node("Mul", ["s", "r"], ["y"], name="mul_d"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[w],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def model_and_config(tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "m.onnx"
    onnx.save(_model(), model)
    config = tmp_path / "bl.json"
    config.write_text(json.dumps({"blacklist": ["Conv->Relu"]}))
    return model, config


def _check_page(page: Path, dom: str, text: str, report: dict) -> None:
    raw = page.read_text()
    # self-contained and escaped: no script, no external asset, the hostile name as text
    for bad in ("<script", "<link", " src=", "url(", "<iframe"):
        assert bad not in raw.lower(), bad
        assert bad not in dom.lower(), bad
    assert EVIL in text
    # summary figures
    assert f"{report['kernels_before']} kernels before fusion" in text
    assert f"{report['kernels_after']} kernels after fusion" in text
    # every group with its pattern and ONNX origins, coloured in the graph
    assert report["groups"]
    for g in report["groups"]:
        assert g["pattern"] in text
        for origin in g["origins"]:
            assert origin in text
    # every refusal with its code and reason
    assert report["refusals"]
    for r in report["refusals"]:
        assert r["code"] in text
        assert r["reason"] in text
    assert "blacklisted" in text
    # the memory plan: its heading and the picture's own caption
    assert "Memory plan" in text
    assert "schedule step" in text
    assert "arena offset" in text


def test_compile_report_html_in_chromium(chromium: str, tmp_path: Path,
                                         model_and_config: tuple[Path, Path]) -> None:  # fmt: skip
    model, config = model_and_config
    page, out = tmp_path / "report.html", tmp_path / "out"
    argv = [str(model), "-o", str(out), "--config", str(config), "--report-html", str(page)]
    assert compile_cli.main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    dom, text = rendered_text(chromium, page)
    _check_page(page, dom, text, report)
    assert "Graph after fusion" in text
    assert "Per-kernel profile" not in text  # only autofusion-bench --profile times kernels
    assert not list(tmp_path.glob(".report.html*"))  # the staged copy was renamed away


def test_bench_report_html_with_profile(chromium: str, tmp_path: Path,
                                        model_and_config: tuple[Path, Path],
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("AUTOFUSION_PEAK_GFLOPS", "100")
    monkeypatch.setenv("AUTOFUSION_DRAM_GBS", "10")
    model, config = model_and_config
    page = tmp_path / "bench.html"
    argv = [str(model), "--config", str(config), "--threads", "1", "--runs", "2", "--warmup",
            "1", "--profile", "5", "--report-html", str(page), "--json"]  # fmt: skip
    assert bench.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    dom, text = rendered_text(chromium, page)
    _check_page(page, dom, text, result["report"])
    assert "Per-kernel profile" in text
    for roof in ("sgemm 100.0 GFLOP/s on 1 thread(s)", "copy bandwidth 10.0 GB/s",
                 "ridge 10.0 FLOP/B"):  # fmt: skip
        assert roof in text
    for p in result["profile"]:
        assert p["kernel"] in text
        assert f"{p['gflops_per_s']:.2f}" in text
        assert f"{p['gb_per_s']:.2f}" in text
        assert p["bound"] in text
    assert "latency onnxruntime" in text
    assert "outputs match" in text


@pytest.mark.parametrize("where", ["missing-dir", "is-a-dir"])
def test_bad_path_fails_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    target = tmp_path / "nope" / "r.html" if where == "missing-dir" else tmp_path
    out = tmp_path / "out"
    rc = compile_cli.main(["zoo:tiny_cnn", "-o", str(out), "--report-html", str(target)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "--report-html" in err
    assert "Traceback" not in err
    assert not out.exists()
    rc = bench.main(["zoo:tiny_cnn", "--runs", "1", "--report-html", str(target)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "--report-html" in err
    assert "Traceback" not in err
    assert "importing" not in err  # refused before the compile started


def test_graph_drawing_stays_small_for_big_models() -> None:
    """~0.5 KB a step: 2,000 kernels (a BERT-large-sized graph) stay far below 50 MB."""
    steps = [Step(i, "kernel", f"p{i % 7}", [f"/layer{i}/node/Op"] * 3, "1x64x56x56")
             for i in range(2000)]  # fmt: skip
    for i, s in enumerate(steps[1:], 1):
        s.producers = [i - 1] + ([i - 3] if i >= 3 and i % 3 == 0 else [])
    from autofusion.policy.html_report import _layout

    _layout(steps)
    svg = graph_svg(steps)
    assert svg.count("<rect") == 2000
    assert len(svg) < 2_000_000
