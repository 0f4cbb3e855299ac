"""Hostile states of the compile cache and of build folders (issue 10, items 4, 6, 13d).

A damaged cache entry (truncated or bit-flipped file, garbage report, missing file or
manifest, a file where the entry's folder should be) is detected on the next hit, removed and
rebuilt: the compile succeeds with correct outputs, never a SIGBUS or a permanent failure.
Build folders go when their model or process does. A cache folder that cannot be used is one
clear error naming it and AUTOFUSION_CACHE_DIR.

The model is a small elementwise graph with constants (so the entry has a real weights.bin):
these tests are about the cache and build folders, not kernels, and each one builds at least
once, so a model whose C compiles in well under a second keeps the file cheap.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hostile import assert_clean_api_error, assert_clean_cli_error, assert_nothing_written, run_tool
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import assert_close
from autofusion.runtime import cache
from autofusion.zoo import sample_inputs


def _small_model() -> onnx.ModelProto:
    """y = tanh(x * scale + shift) * 2 over [1, 4, 8, 8]: outputs of ordinary size. ``shift`` is
    big enough to go to weights.bin (small constants are printed into model.c)."""
    rng = np.random.default_rng(11)
    scale = numpy_helper.from_array(rng.uniform(0.5, 1.5, (4, 1, 1)).astype(np.float32), "scale")
    shift = numpy_helper.from_array(rng.uniform(-1, 1, (4, 8, 8)).astype(np.float32), "shift")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "scale"], ["a"]),
            helper.make_node("Add", ["a", "shift"], ["b"]),
            helper.make_node("Tanh", ["b"], ["c"]),
            helper.make_node("Mul", ["c", "two"], ["y"]),
        ],
        "hostile_cache",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [scale, shift, two],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


_MODEL_DIR = Path(tempfile.mkdtemp(prefix="af-hostile-cache-"))
atexit.register(shutil.rmtree, _MODEL_DIR, ignore_errors=True)
MODEL = str(_MODEL_DIR / "small.onnx")  # what every compile here (and its subprocesses) loads
onnx.save(_small_model(), MODEL)


def get_model(path: str) -> onnx.ModelProto:
    return onnx.load(path)


def _reference(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def _assert_correct(model: autofusion.CompiledModel) -> None:
    feeds = sample_inputs(get_model(MODEL), seed=3)
    ours, ref = model.run(feeds), _reference(feeds)
    assert set(ours) == set(ref)
    for name, r in ref.items():
        assert 0.1 <= float(np.max(np.abs(r))) <= 10  # an ordinary-sized output
        assert_close(ours[name], r, name)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding one good entry for the model, built once and copied by each test."""
    d = tmp_path_factory.mktemp("template")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(cache.ENV_CACHE_DIR, str(d))
        autofusion.compile(MODEL, threads=1).close()
    return d


@pytest.fixture
def cache_dir(tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    shutil.copytree(template, d)
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(d))
    return d


def _entry(cache_dir: Path) -> Path:
    (entry,) = [p for p in cache_dir.iterdir() if cache._KEY_RE.fullmatch(p.name)]
    return entry


def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _flip_bit(path: Path) -> None:
    """Flip one bit in the middle of ``path``, keeping its size and mtime (as bit rot does)."""
    st = path.stat()
    with open(path, "r+b") as f:
        f.seek(st.st_size // 2)
        byte = f.read(1)[0]
        f.seek(st.st_size // 2)
        f.write(bytes([byte ^ 0x10]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00{not json")


def _replace_entry_by_file(entry: Path) -> None:
    shutil.rmtree(entry)
    entry.write_text("not a directory")


# fmt: off
FAULTS: dict[str, Callable[[Path], None]] = {
    "truncated libmodel.so": lambda e: _truncate(e / "libmodel.so"),
    "truncated weights.bin": lambda e: _truncate(e / "weights.bin"),
    "bit-flipped weights.bin": lambda e: _flip_bit(e / "weights.bin"),
    "bit-flipped libmodel.so": lambda e: _flip_bit(e / "libmodel.so"),
    "garbage report.json": lambda e: _garbage(e / "report.json"),
    "missing model.h": lambda e: (e / "model.h").unlink(),
    "missing weights.bin": lambda e: (e / "weights.bin").unlink(),
    "missing manifest": lambda e: (e / cache.MANIFEST).unlink(),
    "garbage manifest": lambda e: _garbage(e / cache.MANIFEST),
    "manifest without weights.bin": lambda e: (e / cache.MANIFEST).write_text(json.dumps(
        {"version": 1, "files": {"libmodel.so": json.loads((e / cache.MANIFEST).read_text())[
            "files"]["libmodel.so"]}})),
    "entry replaced by a file": _replace_entry_by_file,
}
# fmt: on


@pytest.mark.parametrize("fault", FAULTS)
def test_damaged_entry_is_rebuilt(cache_dir: Path, fault: str) -> None:
    entry = _entry(cache_dir)
    good = autofusion.compile(MODEL, threads=1)
    assert good.report.get("cached") is True  # the template's entry is a hit while intact
    good.close()
    FAULTS[fault](entry)
    said: list[str] = []
    again = autofusion.compile(MODEL, threads=1, progress=said.append)
    assert again.report.get("cached") is not True  # rebuilt, not loaded
    assert any("damaged build" in s and entry.name in s for s in said), said
    _assert_correct(again)
    assert cache.check_entry(entry, cache.ENTRY_FILES) is None
    third = autofusion.compile(MODEL, threads=1)  # the rebuilt entry is a hit
    assert third.report.get("cached") is True
    _assert_correct(third)
    leftovers = [p.name for p in cache_dir.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_bit_flip_is_caught_in_a_fresh_process(cache_dir: Path) -> None:
    """Across processes every file is hashed on its first load (no stat shortcut)."""
    _flip_bit(_entry(cache_dir) / "weights.bin")
    script = textwrap.dedent(f"""
        import autofusion
        m = autofusion.compile({MODEL!r}, threads=1, progress=True)
        print("cached" if m.report.get("cached") else "rebuilt")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "rebuilt"
    assert "weights.bin does not match its sha256" in proc.stderr


def test_files_damaged_while_loaded_do_not_crash(cache_dir: Path) -> None:
    """The library runs from a private copy and the weights were read into memory: nothing
    done to the entry's files afterwards (truncation, rewriting) may SIGBUS the process."""
    script = textwrap.dedent(f"""
        import os
        import numpy as np
        import autofusion
        import onnx
        from autofusion.zoo import sample_inputs
        m = autofusion.compile({MODEL!r}, threads=1)
        feeds = sample_inputs(onnx.load({MODEL!r}), seed=3)
        before = m.run(feeds)
        for name in ("libmodel.so", "weights.bin"):
            with open(m.directory / name, "r+b") as f:
                f.truncate(100)
                f.write(b"garbage" * 1000)
        after = m.run(feeds)
        assert all(np.array_equal(before[k], after[k]) for k in before)
        m2 = autofusion.compile({MODEL!r}, threads=1)  # detects the damage, rebuilds
        assert m2.report.get("cached") is not True
        assert all(np.array_equal(before[k], m2.run(feeds)[k]) for k in before)
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr}"
    assert proc.stdout.strip() == "ok"


def test_truncated_library_outside_the_cache_is_an_error(tmp_path: Path, cache_dir: Path) -> None:
    """ModelLibrary on a truncated .so (e.g. an ``-o`` folder): an error, not a SIGBUS."""
    from autofusion.runtime.loader import ModelLibrary

    entry = _entry(cache_dir)
    lib = tmp_path / "libmodel.so"
    shutil.copyfile(entry / "libmodel.so", lib)
    _truncate(lib)
    with pytest.raises(AutofusionError) as ei:
        ModelLibrary(lib, entry / "weights.bin", 1)
    assert_clean_api_error(ei, str(lib), "truncated or corrupt")


def test_two_models_from_one_entry_are_independent(cache_dir: Path) -> None:
    """Private copies of one library must not alias each other (glibc matches loaded
    libraries by name, and /proc/self/fd/N names are reused)."""
    a = autofusion.compile(MODEL, threads=1)
    b = autofusion.compile(MODEL, threads=1)
    a.close()
    _assert_correct(b)


# ---- concurrency ------------------------------------------------------------------------

_COMPILE_AND_CHECK = textwrap.dedent(f"""
    import numpy as np, onnxruntime as ort
    import autofusion
    import onnx
    from autofusion.zoo import sample_inputs
    m = autofusion.compile({MODEL!r}, threads=2)
    feeds = sample_inputs(onnx.load({MODEL!r}), seed=4)
    sess = ort.InferenceSession({MODEL!r}, providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)[0]
    got = next(iter(m.run(feeds).values()))
    assert np.allclose(got, ref, rtol=1e-3, atol=1e-4 * max(1, np.abs(ref).max()))
    print("ok")
""")


def test_racing_compiles_both_end_correct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(tmp_path / "race"))
    procs = [subprocess.Popen([sys.executable, "-c", _COMPILE_AND_CHECK], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]  # fmt: skip
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    (entry,) = [p for p in (tmp_path / "race").iterdir() if cache._KEY_RE.fullmatch(p.name)]
    assert cache.check_entry(entry, cache.ENTRY_FILES) is None
    assert list((tmp_path / "race" / "tmp").iterdir()) == []


# ---- build folders: uncached models, killed builds ----------------------------------------


def test_uncached_build_folder_goes_with_its_model(cache_dir: Path) -> None:
    m = autofusion.compile(MODEL, threads=1, cache=False)
    directory = m.directory
    _assert_correct(m)
    assert directory.is_dir()
    del m
    gc.collect()
    assert not directory.exists()


def test_uncached_build_folder_goes_at_exit(cache_dir: Path) -> None:
    script = textwrap.dedent(f"""
        import autofusion
        m = autofusion.compile({MODEL!r}, threads=1, cache=False)
        print(m.directory)
        import builtins; builtins.keep = m  # alive until the interpreter exits
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    directory = Path(proc.stdout.strip())
    assert directory.parent == cache_dir / "tmp"
    assert not directory.exists()


def test_a_live_uncached_model_keeps_its_folder(cache_dir: Path) -> None:
    """Another process's sweep must not take the folder of a model still in use."""
    m = autofusion.compile(MODEL, threads=1, cache=False)
    proc = subprocess.run([sys.executable, "-c",
                           "from autofusion.runtime import cache; print(cache.prune(0))"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert m.directory.is_dir()
    _assert_correct(m)
    m.close()
    assert not m.directory.exists()


def _kill_once_staging_appears(cmd: list[str], tmp: Path, cwd: Path | None = None) -> Path:
    """Start ``cmd``, SIGKILL it as soon as its build folder exists in ``tmp``; return it."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            found = [p for p in tmp.glob("build-*") if (p / "model.c").exists()] \
                if tmp.is_dir() else []  # fmt: skip
            if found:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
                return found[0]
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        raise AssertionError("the build folder never appeared")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_build_folder_is_reclaimed_by_the_next_compile(cache_dir: Path) -> None:
    script = f"import autofusion; autofusion.compile({MODEL!r}, threads=3)"
    killed = _kill_once_staging_appears([sys.executable, "-c", script], cache_dir / "tmp")
    assert killed.is_dir()
    m = autofusion.compile(MODEL, threads=3)  # a miss: builds, and reclaims
    assert not killed.exists()
    _assert_correct(m)


def test_killed_cli_writes_nothing_and_is_reclaimed(cache_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "autofusion.tools.compile", MODEL, "-o", str(out)]
    killed = _kill_once_staging_appears(cmd, cache_dir / "tmp")
    assert_nothing_written(out)
    proc = run_tool("compile", [MODEL, "-o", str(out)])
    assert proc.returncode == 0, proc.stderr.decode()
    assert not killed.exists()
    assert list((cache_dir / "tmp").iterdir()) == []
    from autofusion.runtime.loader import ModelLibrary

    lib = ModelLibrary(out / "libmodel.so", out / "weights.bin", 1)
    feeds = sample_inputs(get_model(MODEL), seed=3)
    ours, ref = lib.run(feeds), _reference(feeds)
    for name, r in ref.items():
        assert_close(ours[name], r, name)


# ---- a cache folder that cannot be used ---------------------------------------------------


def _unusable_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return {
        "regular file": (a_file, "exists and is not a directory"),
        "below a file": (a_file / "sub", "exists and is not a directory"),
        # root may write anywhere, so use a file system nobody can create folders in
        "unwritable": (Path("/sys"), "not writable"),
    }


@pytest.mark.parametrize("case", ["regular file", "below a file", "unwritable"])
def test_unusable_cache_folder_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  case: str) -> None:  # fmt: skip
    path, why = _unusable_paths(tmp_path)[case]
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(path))
    with pytest.raises(AutofusionError) as ei:
        autofusion.compile(MODEL, threads=1)
    assert_clean_api_error(ei, str(path), cache.ENV_CACHE_DIR, why)
    out = tmp_path / "out"
    proc = run_tool("compile", [MODEL, "-o", str(out)])
    assert_clean_cli_error(proc, str(path), cache.ENV_CACHE_DIR, why)
    assert_nothing_written(out)
