"""The epilogue calling convention has one definition (``clib.EPILOGUE_PARAMS``): afrt.h's
``afrt_epilogue.fn`` and the printed epilogue functions must both follow it."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.dialects import clib

AFRT_H = Path(autofusion.__file__).parent / "runtime" / "include" / "afrt.h"


def _typedef_params() -> list[tuple[str, str]]:
    text = AFRT_H.read_text()
    m = re.search(
        r"typedef struct \{\s*void \(\*fn\)\(([^)]*)\);\s*void \*ctx;\s*\} afrt_epilogue;", text
    )
    assert m, "afrt.h: the afrt_epilogue typedef was not found"
    params = []
    for p in " ".join(m.group(1).split()).split(","):
        ctype, name = re.fullmatch(r"\s*(.*?[\s*])(\w+)\s*", p).groups()  # type: ignore[union-attr]
        params.append((name, ctype.strip()))
    return params


def test_afrt_h_typedef_is_the_one_definition() -> None:
    got = _typedef_params()
    want = [(n, c.strip()) for n, c in clib.EPILOGUE_PARAMS]
    assert got == want


def test_printed_epilogue_signature_follows_the_definition() -> None:
    blk, args = clib.epilogue_block()
    assert [a.type for a in blk.args] == clib.epilogue_arg_types()
    assert args.ld is blk.args[7]
    assert args.ctx is blk.args[0]
    names = [f"v{i}" for i in range(len(clib.EPILOGUE_PARAMS))]
    assert clib.epilogue_c_params(names) == (
        "void *v0, float *v1, int64_t v2, int64_t v3, int64_t v4, int64_t v5, int64_t v6, "
        "int64_t v7"
    )


def _conv_tanh_relu() -> onnx.ModelProto:
    """Conv -> Tanh and Conv -> Relu: a generated epilogue and afrt.h's built-in one (Sigmoid
    no longer serves: it is afrt.h's built-in SiLU/sigmoid epilogue since 2026-12-05)."""
    rng = np.random.default_rng(0)
    # two weights: one conv read by both would be one kernel (canonicalize-nn's CSE)
    ws = [
        numpy_helper.from_array(rng.uniform(-0.3, 0.3, (8, 3, 3, 3)).astype(np.float32), n)
        for n in ("w", "w2")
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Tanh", ["c1"], ["y1"]),
        helper.make_node("Conv", ["x", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["y2"]),
    ]
    g = helper.make_graph(
        nodes,
        "conv_tanh_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 8, 8, 8]) for y in ("y1", "y2")],
        ws,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_generated_epilogue_compiles_against_afrt_h(tmp_path: Path) -> None:
    """A fused Conv + Tanh has a generated epilogue: its printed signature follows the
    definition, and the C passes gcc's checks (-Werror: a function whose type is not
    ``afrt_epilogue.fn``'s would be an incompatible-pointer error) against afrt.h; the fused
    Conv + Relu passes afrt.h's built-in ``afrt_epi_clamp_fn`` instead (same check)."""
    from autofusion.lowering.c.testing import compile_onnx, emit_lowered

    emit_lowered(compile_onnx(_conv_tanh_relu()), tmp_path)
    text = (tmp_path / "model.c").read_text()
    sigs = re.findall(r"static AFRT_WIDE_VEC void (\w+_epilogue)\(([^)]*)\)", text)
    assert len(sigs) == 1, "only the Conv + Tanh kernel should have a generated epilogue"
    assert text.count("(afrt_epilogue){afrt_epi_clamp_fn, ") >= 1
    for _, params in sigs:
        types = [re.sub(r"\w+$", "", p.strip()).strip() for p in params.split(",")]
        assert types == [c.strip() for _, c in clib.EPILOGUE_PARAMS]
    cmd = ["gcc", "-fsyntax-only", "-Werror", "-Wall", f"-I{AFRT_H.parent}", f"-I{tmp_path}",
           "-fopenmp", str(tmp_path / "model.c")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def _vector_bytes(model_c: Path, march: str, first: int, last: int) -> set[int]:
    """The vector widths gcc reports for the loops on lines [first, last] of model_c."""
    cmd = ["gcc", "-O3", "-std=c11", f"-march={march}", "-fopenmp", "-fopt-info-vec-optimized",
           f"-I{AFRT_H.parent}", "-c", str(model_c), "-o", "/dev/null"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.findall(
        r"model\.c:(\d+):\d+: optimized: loop vectorized using (\d+) byte", done.stderr
    )
    return {int(b) for line, b in found if first <= int(line) <= last}


@pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("gcc") is None,
                    reason="AFRT_WIDE_VEC applies to gcc on x86-64")  # fmt: skip
def test_a_generated_epilogue_uses_64_byte_vectors_with_avx512(tmp_path: Path) -> None:
    """The printed epilogue carries AFRT_WIDE_VEC: with AVX-512 (x86-64-v4) gcc vectorises its
    loop with 64-byte vectors (its remainder with 32-byte ones), where -march alone tunes for
    32-byte ones; without AVX-512 (x86-64-v3) the macro is empty: no 64-byte vectors."""
    from autofusion.lowering.c.testing import compile_onnx, emit_lowered

    emit_lowered(compile_onnx(_conv_tanh_relu()), tmp_path)
    model_c = tmp_path / "model.c"
    lines = model_c.read_text().splitlines()
    first = next(i for i, t in enumerate(lines, 1) if re.match(r"static .*_epilogue\(", t))
    last = next(i for i, t in enumerate(lines, 1) if i > first and t == "}")
    assert lines[first - 1].startswith("static AFRT_WIDE_VEC void ")
    assert 64 in _vector_bytes(model_c, "x86-64-v4", first, last)
    assert 64 not in _vector_bytes(model_c, "x86-64-v3", first, last)
