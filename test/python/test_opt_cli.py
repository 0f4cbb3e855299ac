"""autofusion-opt as a user runs it: good input works, bad input gives one clear error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

OPT = [sys.executable, "-m", "autofusion.tools.opt"]

GOOD = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(OPT + args, input=stdin, capture_output=True, text=True)


def test_roundtrip_from_stdin() -> None:
    proc = _run([], GOOD)
    assert proc.returncode == 0, proc.stderr
    assert "nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>" in proc.stdout


def test_bad_ir_text_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(GOOD.replace("nn.relu %x :", "nn.relu %x, :"))
    proc = _run([str(bad)])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "error" in proc.stderr


def test_verifier_error_names_the_op(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
        "  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
        "  func.return %y : tensor<3x2xf32>\n}\n"
    )
    proc = _run([str(bad)])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "'nn.relu'" in proc.stderr
    assert str(bad) in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_file() -> None:
    proc = _run(["/nonexistent/model.mlir"])
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "/nonexistent/model.mlir" in proc.stderr


def test_pipeline_string_reproduces_compile(tmp_path: Path) -> None:
    """``Pipeline.pipeline_string()`` is exactly what compile() runs: autofusion-opt with that
    ``-p`` and ``-t c`` prints compile()'s model.c byte for byte (and so does
    ``--compile-pipeline``, which builds the same Pipeline)."""
    import autofusion
    from autofusion.pipeline import Pipeline, PipelineOptions, blocked_convs

    text = Pipeline.from_options(PipelineOptions()).pipeline_string()
    # the option is printed where it differs from the pass's default (AVX-512 builds)
    blocked = "{blocked_convs=true}" if blocked_convs(PipelineOptions()) else ""
    assert text.endswith(f"convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked}")
    m = autofusion.compile("zoo:tiny_bert", cache=False)
    try:
        assert m.report["pipeline"] == text
        model_c = (m.directory / "model.c").read_text()
    finally:
        m.close()
    for how in (["-p", text], ["--compile-pipeline"]):
        out = tmp_path / "opt.c"
        proc = _run(["zoo:tiny_bert", *how, "-t", "c", "-o", str(out)])
        assert proc.returncode == 0, proc.stderr
        assert out.read_text() == model_c, how


def test_pipeline_string_with_options_reproduces_the_build(tmp_path: Path) -> None:
    """With a memory limit (tile-fusion and its option) and with fusion off, the printed
    pipeline still reproduces the compile's model.c."""
    from autofusion.api import build_model_dir, open_model
    from autofusion.pipeline import PipelineOptions

    for i, opts in enumerate(
        [PipelineOptions(memory_limit_mb=0.05), PipelineOptions(fusion=False)]
    ):
        d = tmp_path / f"build{i}"
        report = build_model_dir(open_model("zoo:tiny_cnn"), d, opts, build=False)
        assert ("tile-fusion{" in report["pipeline"]) == (opts.memory_limit_mb is not None)
        out = tmp_path / f"opt{i}.c"
        proc = _run(["zoo:tiny_cnn", "-p", report["pipeline"], "-t", "c", "-o", str(out)])
        assert proc.returncode == 0, proc.stderr
        assert out.read_text() == (d / "model.c").read_text(), opts


def test_c_target_on_ir_that_is_not_lowered_names_the_op() -> None:
    proc = _run(["-t", "c"], GOOD)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "c target: op nn.relu in @main is not lowered" in proc.stderr
    assert "-p 'convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops'" in proc.stderr


def test_print_pipeline_and_compile_pipeline_for_mlir() -> None:
    """``--compile-pipeline`` with ``-t mlir`` runs the tensor passes only (the fused IR);
    ``--print-pipeline`` shows the -p text; giving -p too is an error."""
    proc = _run(["--compile-pipeline", "--print-pipeline"], GOOD)
    assert proc.returncode == 0, proc.stderr
    # on AVX-512 builds fuse-conv-chain knows the blocked chain band, and assign-layout and
    # fuse-conv-pool (blocked stems) run
    blocked = r"fuse-conv-chain\{blocked_convs=true\},assign-layout,fuse-conv-pool"
    want = rf"fuse,(fuse-conv-chain|{blocked}),fuse-conv-pair,fuse-pw-chain,plan-buffers$"
    assert re.search(want, proc.stderr.strip())
    assert "fusion.kernel" in proc.stdout or "nn.relu" in proc.stdout
    proc = _run(["--compile-pipeline", "-p", "fuse"], GOOD)
    assert proc.returncode == 1
    assert "either -p or --compile-pipeline" in proc.stderr


def test_mlir_input_does_not_import_onnx(tmp_path: Path) -> None:
    """An .mlir input never needs onnx; importing it (and ml_dtypes) costs ~0.5 s of CPU per
    start, and the lit suite starts autofusion-opt about a hundred times."""
    from autofusion import zoo
    from autofusion.tools import opt

    assert opt.ZOO_PREFIX == zoo.ZOO_PREFIX
    src = tmp_path / "relu.mlir"
    src.write_text(GOOD)
    script = (
        "import sys\n"
        "from autofusion.tools.opt import main\n"
        f"sys.argv = ['autofusion-opt', {str(src)!r}, '-p', 'canonicalize-nn']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'ml_dtypes')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "nn.relu" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
