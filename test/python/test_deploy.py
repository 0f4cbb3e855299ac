"""Deployable output (issue 17): ``--cpu`` portable builds, the self-contained package folder
(Makefile, CMakeLists.txt, pkg-config, main.c with .npy I/O) rebuilt elsewhere and run, the
load-time CPU check, and the aarch64 cross build run under qemu — each compared with
onnxruntime at the project's bar."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import autofusion
from autofusion.errors import AutofusionError
from autofusion.runtime import loader, toolchain
from autofusion.testing import assert_close
from autofusion.tools import compile as compile_tool
from autofusion.zoo import get_model, sample_inputs

REPO = Path(__file__).resolve().parents[2]
QEMU_SYSROOT = "/usr/aarch64-linux-gnu"


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def compile_folder(name: str, out: Path, cpu: str) -> None:
    assert compile_tool.main([f"zoo:{name}", "-o", str(out), "--cpu", cpu, "--threads", "1"]) == 0


def write_inputs(model: onnx.ModelProto, where: Path) -> tuple[dict[str, np.ndarray], list[str]]:
    feeds = sample_inputs(model, seed=3)
    files = []
    for i, (_, x) in enumerate(feeds.items()):
        np.save(where / f"in{i}.npy", x)
        files.append(str(where / f"in{i}.npy"))
    return feeds, files


def run_main(exe: list[str], folder: Path, files: list[str], n_out: int) -> list[np.ndarray]:
    outdir = folder / "outs"
    outdir.mkdir(exist_ok=True)
    proc = subprocess.run([*exe, str(folder / "weights.bin"), *files, "-o", str(outdir)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [np.load(outdir / f"output_{j}.npy") for j in range(n_out)]


def text_files(folder: Path) -> dict[str, str]:
    out = {}
    for p in folder.iterdir():
        if p.suffix not in (".so", ".bin", ".a", ".o") and p.is_file():
            out[p.name] = p.read_text(errors="replace")
    return out


@pytest.fixture(scope="module")
def v3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("v3") / "tiny_cnn"
    compile_folder("tiny_cnn", out, "x86-64-v3")
    return out


def test_folder_is_self_contained(v3_folder: Path) -> None:
    names = {p.name for p in v3_folder.iterdir()}
    for f in ("model.c", "model.h", "weights.bin", "afrt.h", "afnpy.h", "af_build.c",
              "af_build.h", "Makefile", "CMakeLists.txt", "autofusion-model.pc", "main.c",
              "libmodel.so", "report.json"):  # fmt: skip
        assert f in names, f
    env_paths = {sys.prefix, str(REPO), str(Path(toolchain.openblas_dirs()[1]))}
    for fname, text in text_files(v3_folder).items():
        for p in env_paths:
            assert p not in text, f"{fname} names {p}"
        assert "openblas" not in text.lower() or fname == "afrt.h", fname
    make = (v3_folder / "Makefile").read_text()
    assert "-march=x86-64-v3" in make
    assert "-march=native" not in make
    assert "-Wl,-rpath" not in make
    assert '"x86-64-v3"' in (v3_folder / "af_build.c").read_text()
    import json

    assert json.loads((v3_folder / "report.json").read_text())["cpu"] == "x86-64-v3"
    # the library needs libc, libm and libgomp only
    ldd = subprocess.run(["ldd", str(v3_folder / "libmodel.so")], capture_output=True, text=True)
    assert "openblas" not in ldd.stdout


def _copy(folder: Path, dest: Path) -> Path:
    shutil.copytree(folder, dest)
    for f in ("libmodel.so",):
        (dest / f).unlink()
    return dest


def test_makefile_and_cmake_builds_run_main_on_npy(v3_folder: Path, tmp_path: Path) -> None:
    model = get_model("tiny_cnn")
    feeds, files = write_inputs(model, tmp_path)
    ref = ort_outputs(model, feeds)
    made = _copy(v3_folder, tmp_path / "made")
    subprocess.run(["make", "-s", "all", "main"], cwd=made, check=True)
    assert (made / "libmodel.so").is_file()
    for got, want in zip(run_main([str(made / "model_main")], made, files, len(ref)), ref,
                         strict=True):  # fmt: skip
        assert_close(got, want, "make-built main")
    # the built .so is a normal library too: load it from Python, same numbers
    m = loader.ModelLibrary(made / "libmodel.so", made / "weights.bin", 1)
    assert_close(m.run(feeds)[model.graph.output[0].name], ref[0], "make-built libmodel.so")
    m.close()
    # pkg-config resolves relative to the .pc file
    if shutil.which("pkg-config"):
        pc = subprocess.run(["pkg-config", "--libs", "--cflags", str(made / "autofusion-model.pc")],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert f"-L{made}" in pc
        assert "-lmodel" in pc
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed: the CMake build was not checked")
    src = _copy(v3_folder, tmp_path / "cm_src")
    build = tmp_path / "cm_build"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert (build / "libmodel.so").is_file()
    assert (build / "libmodel.a").is_file()
    for got, want in zip(run_main([str(build / "model_main")], src, files, len(ref)), ref,
                         strict=True):  # fmt: skip
        assert_close(got, want, "cmake-built main")


@pytest.fixture(scope="module")
def v3_main(v3_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the folder with ``make main`` run once: the bad-input cases only read it."""
    made = _copy(v3_folder, tmp_path_factory.mktemp("v3_main") / "m")
    subprocess.run(["make", "-s", "main"], cwd=made, check=True)
    return made


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("dtype", "dtype '<f8', the model expects '<f4'"),
        ("shape", "shape [1, 3, 32, 31], the model expects [1, 3, 32, 32]"),
        ("fortran", "Fortran-ordered arrays are not supported"),
        ("bigendian", "unsupported dtype '>f4'"),
        ("truncated", "shorter than its header says"),
        ("magic", "not a .npy file"),
        ("hugedim", "not a non-negative integer"),
    ],
)
def test_main_rejects_bad_npy(v3_main: Path, tmp_path: Path, bad: str, message: str) -> None:
    made = v3_main
    x = sample_inputs(get_model("tiny_cnn"), seed=0)["input"]
    f = tmp_path / "x.npy"
    if bad == "dtype":
        np.save(f, x.astype(np.float64))
    elif bad == "shape":
        np.save(f, x[..., :31])
    elif bad == "fortran":
        np.save(f, np.asfortranarray(x))
    elif bad == "bigendian":
        np.save(f, x.astype(">f4"))
    elif bad == "truncated":
        np.save(f, x)
        f.write_bytes(f.read_bytes()[:-7])
    elif bad == "magic":
        f.write_bytes(b"not numpy at all")
    else:  # a dimension that overflows int64
        np.save(f, x)
        raw = f.read_bytes().replace(b"(1, 3, 32, 32)", b"(99999999999999999999, 3)")
        f.write_bytes(raw)
    proc = subprocess.run([str(made / "model_main"), str(made / "weights.bin"), str(f)],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
    assert str(f) in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1  # one line


def test_npy_version2_header_and_int64_bool_io(tmp_path: Path) -> None:
    """afnpy.h directly: a version 2.0 file reads; what it writes numpy reads back."""
    src = tmp_path / "t.c"
    src.write_text(
        '#include "afnpy.h"\n'
        "int main(int argc, char **argv) {\n"
        "    (void)argc;\n"
        "    afnpy_array a;\n"
        '    if (afnpy_read(argv[1], "<i8", 0, NULL, &a)) {\n'
        '        fprintf(stderr, "%s\\n", afnpy_error());\n'
        "        return 1;\n"
        "    }\n"
        '    if (afnpy_write(argv[2], "<i8", a.rank, a.shape, a.data)) return 1;\n'
        "    afnpy_free(&a);\n"
        "    const int64_t s[1] = {3};\n"
        "    const unsigned char b[3] = {1, 0, 1};\n"
        '    return afnpy_write(argv[3], "|b1", 1, s, b) ? 1 : 0;\n'
        "}\n"
    )  # fmt: skip
    exe = tmp_path / "t"
    cmd = [toolchain.c_compiler(), "-std=c11", *toolchain.WERROR_FLAGS, "-Wpedantic",
           f"-I{toolchain.INCLUDE_DIR}", str(src), "-o", str(exe)]  # fmt: skip
    subprocess.run(cmd, check=True)
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4) - 7
    with open(tmp_path / "v2.npy", "wb") as fh:
        np.lib.format.write_array(fh, x, version=(2, 0))
    subprocess.run([str(exe), str(tmp_path / "v2.npy"), str(tmp_path / "o.npy"),
                    str(tmp_path / "b.npy")], check=True)  # fmt: skip
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), x)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), np.array([True, False, True]))


def test_load_refuses_build_for_missing_cpu_features(
    v3_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU without AVX2 (faked: /proc/cpuinfo's flags minus avx2) refuses the v3 build
    with a clear error instead of dying of SIGILL in the first kernel."""
    flags = loader.cpu_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo on this platform: the check has nothing to compare with")
    monkeypatch.setattr(loader, "cpu_flags", lambda: flags - {"avx2"})
    with pytest.raises(AutofusionError, match=r"built for cpu x86-64-v3, which needs CPU "
                       r"features this machine lacks \(avx2\)"):  # fmt: skip
        loader.ModelLibrary(v3_folder / "libmodel.so", v3_folder / "weights.bin", 1)
    monkeypatch.setattr(loader, "cpu_flags", lambda: flags)
    loader.ModelLibrary(v3_folder / "libmodel.so", v3_folder / "weights.bin", 1).close()


def test_main_refuses_cpu_without_a_required_feature(v3_folder: Path, tmp_path: Path) -> None:
    """main.c's own check (af_cpu_supported, __builtin_cpu_supports): a build requiring a
    feature this CPU lacks exits 1 with one message before running any kernel. No CPU here
    lacks AVX2, so the record is given a requirement no x86 CPU we know of has with AVX2
    only: avx512vp2intersect (Tiger Lake only; absent on Zen 4 and Sapphire Rapids)."""
    made = _copy(v3_folder, tmp_path / "m")
    src = (made / "af_build.c").read_text()
    probe = '    if (!__builtin_cpu_supports("avx512vp2intersect")) return 0;\n'
    (made / "af_build.c").write_text(
        src.replace("    return 1;\n}\n#else", probe + "    return 1;\n}\n#else")
    )
    subprocess.run(["make", "-s", "main"], cwd=made, check=True)
    flags = loader.cpu_flags() or set()
    if "avx512_vp2intersect" in flags:
        pytest.skip("this CPU has avx512vp2intersect: no feature left to miss")
    proc = subprocess.run([str(made / "model_main"), str(made / "weights.bin"), "x.npy"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 1
    assert "built for cpu x86-64-v3, which needs CPU features" in proc.stderr


def test_compile_cpu_option_in_key_and_report(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path / "cache"))
    model = get_model("tiny_cnn")
    feeds = sample_inputs(model, seed=1)
    ref = ort_outputs(model, feeds)[0]
    built = {}
    for cpu in ("x86-64-v2", "x86-64-v3", "native"):
        m = autofusion.compile("zoo:tiny_cnn", threads=1, cpu=cpu)
        assert isinstance(m, autofusion.CompiledModel)
        assert m.report["cpu"] == cpu
        assert_close(m.run(feeds)[model.graph.output[0].name], ref, f"cpu={cpu}")
        built[cpu] = m.directory
        m.close()
    assert len(set(built.values())) == 3  # the cpu is part of the cache key
    with pytest.raises(AutofusionError, match=r"cpu: expected one of native, x86-64-v2"):
        autofusion.compile("zoo:tiny_cnn", cpu="haswell")
    if toolchain.is_cross("aarch64"):
        with pytest.raises(AutofusionError, match=r"cannot be loaded on this x86_64 machine"):
            autofusion.compile("zoo:tiny_cnn", cpu="aarch64")


def test_cli_rejects_bad_cpu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:  # bad usage: argparse's message, exit 1
        compile_tool.main(["zoo:tiny_cnn", "-o", str(tmp_path / "o"), "--cpu", "pentium"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "--cpu" in err
    assert "pentium" in err
    assert "Traceback" not in err
    assert compile_tool.main(["zoo:tiny_cnn", "-o", str(tmp_path / "o"), "--target", "ascendc",
                              "--cpu", "x86-64-v3"]) == 1  # fmt: skip
    assert "--cpu x86-64-v3 applies to --target c only" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_resnet50_v3_folder_elsewhere(tmp_path: Path) -> None:
    """The acceptance case: zoo:resnet50 --cpu x86-64-v3, folder copied, rebuilt with its
    Makefile, main run on .npy inputs, outputs match onnxruntime."""
    out = tmp_path / "r50"
    compile_folder("resnet50", out, "x86-64-v3")
    model = get_model("resnet50")
    feeds, files = write_inputs(model, tmp_path)
    ref = ort_outputs(model, feeds)
    made = _copy(out, tmp_path / "elsewhere")
    shutil.rmtree(out)
    subprocess.run(["make", "-s", "main"], cwd=made, check=True)
    for got, want in zip(run_main([str(made / "model_main")], made, files, len(ref)), ref,
                         strict=True):  # fmt: skip
        assert_close(got, want, "resnet50 main")


# --- aarch64 -----------------------------------------------------------------------------


def _need_cross_tools() -> None:
    missing = [t for t in (toolchain.AARCH64_CC, "qemu-aarch64") if not shutil.which(t)]
    if not missing:
        return
    can_install = shutil.which("apt-get") is not None and os.geteuid() == 0
    if can_install:
        pytest.fail(f"{', '.join(missing)} missing: run the README's install step "
                    "(apt-get install gcc-aarch64-linux-gnu qemu-user)")  # fmt: skip
    pytest.skip(f"{', '.join(missing)} missing and this platform cannot install them "
                "(no apt-get or not root)")  # fmt: skip


#: FMLA by element (``fmla v0.4s, v1.4s, v2.s[3]``): what afrt.h's NEON micro-kernel issues
#: (vfmaq_laneq_f32); GEMM-shaped models have dozens of them in the inlined kernel strips.
FMLA_LANE = re.compile(r"\bfmla\s+v\d+\.4s,\s*v\d+\.4s,\s*v\d+\.s\[[0-3]\]")


def assert_neon_kernels(binary: Path) -> None:
    """The build selected afrt.h's NEON kernels (af_build_kernels, from the same macros that
    pick them) and the binary holds the micro-kernel's lane-indexed FMLAs."""
    assert b"afrt-kernels=neon\0" in binary.read_bytes(), f"{binary.name}: not the NEON kernels"
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    if objdump:  # binutils-aarch64-linux-gnu comes with the cross compiler
        asm = subprocess.run([objdump, "-d", str(binary)], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        assert len(FMLA_LANE.findall(asm)) >= 24, f"{binary.name}: no NEON micro-kernel"


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert", "mobilenet"])
def test_aarch64_build_matches_under_qemu(name: str, tmp_path: Path) -> None:
    _need_cross_tools()
    out = tmp_path / name
    compile_folder(name, out, "aarch64")
    info = subprocess.run(["file", str(out / "libmodel.so")], capture_output=True, text=True)
    if info.returncode == 0:
        assert "aarch64" in info.stdout, info.stdout
    make = (out / "Makefile").read_text()
    assert f"CC = {toolchain.AARCH64_CC}" in make
    assert "-march=armv8-a" in make
    subprocess.run(["make", "-s", "main"], cwd=out, check=True)
    assert_neon_kernels(out / "libmodel.so")
    assert_neon_kernels(out / "model_main")
    model = get_model(name)
    feeds, files = write_inputs(model, tmp_path)
    ref = ort_outputs(model, feeds)
    got = run_main(["qemu-aarch64", "-L", QEMU_SYSROOT, str(out / "model_main")], out, files,
                   len(ref))  # fmt: skip
    for g, want in zip(got, ref, strict=True):
        assert_close(g, want, f"{name} on aarch64")
    with pytest.raises(AutofusionError, match="built for aarch64, cannot be loaded"):
        loader.ModelLibrary(out / "libmodel.so", out / "weights.bin", 1)
