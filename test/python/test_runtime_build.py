"""Build, load and run a compiled-model directory, using a hand-written model.c that
implements the C API (test/python/runtime_c/handwritten/), so the runtime is tested without
the C lowering: Makefile + libmodel.so, ctypes loader (names, shapes, dtypes, feed errors,
af_create failures), the ASan/UBSan test driver, and compiler errors."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from autofusion.errors import AutofusionError
from autofusion.runtime import build, toolchain
from autofusion.runtime.loader import ModelLibrary

HANDWRITTEN = Path(__file__).parent / "runtime_c" / "handwritten"
RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def write_model_dir(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name in ("model.c", "model.h"):
        shutil.copyfile(HANDWRITTEN / name, d / name)
    blob = bytearray(76)
    blob[:48] = W.tobytes()
    blob[64:76] = B.tobytes()
    (d / "weights.bin").write_bytes(bytes(blob))
    return d


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = write_model_dir(tmp_path_factory.mktemp("hand") / "model")
    build.build_shared(d)
    return d


def feeds() -> dict[str, np.ndarray]:
    return {
        "x": RNG.standard_normal((2, 4)).astype(np.float32),
        "ids": np.array([1, -4, 7], dtype=np.int64),
    }


def expected(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"y": np.maximum(f["x"] @ W + B, 0), 'a"b': f["ids"] * 2 + 1}


def test_build_writes_self_contained_dir(built: Path) -> None:
    for name in ("libmodel.so", "Makefile", "afrt.h", "model.c", "weights.bin"):
        assert (built / name).is_file(), name
    make = (built / "Makefile").read_text()
    assert "-Werror" in make
    assert "-fopenmp" in make
    assert "-Wl,-rpath," not in make
    assert "openblas" not in make


def test_makefile_rebuilds(built: Path, tmp_path: Path) -> None:
    d = write_model_dir(tmp_path / "m")
    shutil.copyfile(built / "Makefile", d / "Makefile")
    for f in (*toolchain.RUNTIME_HEADERS, "af_build.c", "af_build.h"):  # the package files
        shutil.copyfile(built / f, d / f)
    subprocess.run(["make", "-s"], cwd=d, check=True)
    assert (d / "libmodel.so").is_file()


@pytest.mark.parametrize("threads", [1, 2])
def test_loader_runs_and_names_outputs(built: Path, threads: int) -> None:
    lib = ModelLibrary(built / "libmodel.so", built / "weights.bin", threads)
    assert [s.name for s in lib.inputs] == ["x", "ids"]
    assert [s.name for s in lib.outputs] == ["y", 'a"b']
    assert lib.inputs[0].shape == (2, 4)
    assert lib.inputs[1].dtype == np.int64
    f = feeds()
    for _ in range(2):  # a model runs any number of times
        out = lib.run(f)
        ref = expected(f)
        assert set(out) == set(ref)
        np.testing.assert_allclose(out["y"], ref["y"], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out['a"b'], ref['a"b'])
    lib.close()
    with pytest.raises(AutofusionError, match="closed"):
        lib.run(f)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.update(x=f["x"].astype(np.float64)), "input 'x': expected dtype float32"),
        (lambda f: f.update(x=f["x"][:1]), r"input 'x': expected shape \[2, 4\], got \[1, 4\]"),
        (lambda f: f.pop("ids"), "missing input.*'ids'"),
        (lambda f: f.update(z=1), "unknown input.*'z'.*'x' float32\\[2, 4\\]"),
    ],
)
def test_feed_errors_name_the_input(built: Path, change, message: str) -> None:
    lib = ModelLibrary(built / "libmodel.so", built / "weights.bin", 1)
    f = feeds()
    change(f)
    with pytest.raises(AutofusionError, match=message):
        lib.run(f)


def test_noncontiguous_feed_is_accepted(built: Path) -> None:
    lib = ModelLibrary(built / "libmodel.so", built / "weights.bin", 1)
    f = feeds()
    f["x"] = np.asfortranarray(f["x"])
    np.testing.assert_allclose(lib.run(f)["y"], expected(f)["y"], rtol=1e-5, atol=1e-6)


def test_library_without_profiling_says_so(built: Path) -> None:
    lib = ModelLibrary(built / "libmodel.so", built / "weights.bin", 1)  # hand-written: none
    with pytest.raises(AutofusionError, match="has no per-kernel profiling"):
        lib.profile()


def test_af_create_failure_is_reported(built: Path, tmp_path: Path) -> None:
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"\0" * 10)
    with pytest.raises(AutofusionError, match=r"af_create failed: .*expected 76 bytes, got 10"):
        ModelLibrary(built / "libmodel.so", bad, 1)


def test_not_a_model_library(tmp_path: Path) -> None:
    src = tmp_path / "x.c"
    src.write_text("int foo(void) { return 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(tmp_path / "x.so")], check=True)
    with pytest.raises(AutofusionError, match="not a compiled autofusion model"):
        ModelLibrary(tmp_path / "x.so", tmp_path / "w.bin")


def test_compile_error_carries_compiler_message(tmp_path: Path) -> None:
    d = write_model_dir(tmp_path / "m")
    (d / "model.c").write_text('#include "model.h"\nint af_num_inputs(void) { return x; }\n')
    with pytest.raises(AutofusionError, match=r"(?s)compiling model\.c failed.*'x' undeclared"):
        build.build_shared(d)


def test_compile_error_is_one_line_with_the_log_saved(tmp_path: Path) -> None:
    """One line (the first compiler error and where the full log is), not a compiler dump."""
    d = write_model_dir(tmp_path / "m")
    body = "".join(f"int f{i}(void) {{ return y{i}; }}\n" for i in range(30))
    (d / "model.c").write_text('#include "model.h"\n' + body)
    with pytest.raises(AutofusionError) as ei:
        build.build_shared(d)
    msg = str(ei.value)
    assert "\n" not in msg, msg
    assert msg.startswith("compiling model.c failed (exit 1): model.c:2:"), msg
    assert "'y0' undeclared" in msg, msg
    assert "'y1'" not in msg, msg
    m = re.search(r"\(full compiler log: (\S+)\)$", msg)
    assert m, msg
    log = Path(m.group(1)).read_text()
    assert "'y29' undeclared" in log, log[:500]
    assert "-Werror" in log, log[:500]
    Path(m.group(1)).unlink()


def test_warnings_are_errors(tmp_path: Path) -> None:
    d = write_model_dir(tmp_path / "m")
    src = (d / "model.c").read_text() + "\nstatic int unused_fn(int a) { int b; return a; }\n"
    (d / "model.c").write_text(src)
    with pytest.raises(AutofusionError, match="unused"):
        build.build_shared(d)
    build.build_shared(d, build.BuildOptions(werror=False))  # same code builds without -Werror


def test_missing_sources(tmp_path: Path) -> None:
    with pytest.raises(AutofusionError, match=re.escape("missing model.c, model.h")):
        build.build_shared(tmp_path)


def test_sanitizer_driver_runs_clean(tmp_path: Path) -> None:
    d = write_model_dir(tmp_path / "m")
    exe = build.build_sanitizer_driver(d)
    f = feeds()
    outs = build.run_driver(
        exe, d / "weights.bin", [f["x"], f["ids"]],
        [((2, 3), np.dtype(np.float32)), ((3,), np.dtype(np.int64))], tmp_path / "io", threads=2,
    )  # fmt: skip
    ref = expected(f)
    np.testing.assert_allclose(outs[0], ref["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(outs[1], ref['a"b'])


def test_sanitizer_catches_an_overflow(tmp_path: Path) -> None:
    d = write_model_dir(tmp_path / "m")
    src = (
        (d / "model.c")
        .read_text()
        .replace("for (int i = 0; i < 3; ++i) z[i]", "for (int i = 0; i < 4; ++i) z[i]")
    )
    (d / "model.c").write_text(src)
    exe = build.build_sanitizer_driver(d)
    f = feeds()
    with pytest.raises(AutofusionError, match="AddressSanitizer"):
        build.run_driver(
            exe, d / "weights.bin", [f["x"], f["ids"]],
            [((2, 3), np.dtype(np.float32)), ((3,), np.dtype(np.int64))], tmp_path / "io",
        )  # fmt: skip
