"""The epilogue calling convention has one definition (``clib.EPILOGUE_PARAMS``): afrt.h's
``afrt_epilogue.fn`` and the printed epilogue functions must both follow it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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


def test_a_generated_epilogue_compiles_against_afrt_h(tmp_path: Path) -> None:
    """zoo:tiny_cnn's fused conv kernels have epilogues: their printed signatures follow the
    definition, and the C passes gcc's checks (-Werror: a function whose type is not
    ``afrt_epilogue.fn``'s would be an incompatible-pointer error) against afrt.h."""
    from autofusion.lowering.c.testing import compile_onnx, emit_lowered
    from autofusion.zoo import get_model

    emit_lowered(compile_onnx(get_model("tiny_cnn")), tmp_path)
    text = (tmp_path / "model.c").read_text()
    sigs = re.findall(r"static void (\w+_epilogue)\(([^)]*)\)", text)
    assert sigs, "tiny_cnn should have fused epilogues"
    for _, params in sigs:
        types = [re.sub(r"\w+$", "", p.strip()).strip() for p in params.split(",")]
        assert types == [c.strip() for _, c in clib.EPILOGUE_PARAMS]
    cmd = ["gcc", "-fsyntax-only", "-Werror", "-Wall", f"-I{AFRT_H.parent}", f"-I{tmp_path}",
           "-fopenmp", str(tmp_path / "model.c")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
