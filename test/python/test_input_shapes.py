"""Pinning dynamic input dimensions from every entry point (issue 12, item 1).

``--input-shape NAME=DIMS`` on autofusion-compile / -bench / -opt and ``input_shapes=`` on
``autofusion.compile``: a dynamic-axis export (``bert_tsdyn.onnx``: inputs ``[batch, seq]``)
compiles at the pinned size and matches onnxruntime; one pin fixes the symbol in the inputs
that share it; every bad pin is one clear error naming the input. Also ``zoo:NAME`` and
``--version`` on the commands (issue 17).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from hostile import assert_clean_api_error, assert_clean_cli_error, assert_nothing_written, run_tool

import autofusion
from autofusion.errors import AutofusionError
from autofusion.frontend.shapes import check_input_shapes, parse_shape_spec
from autofusion.testing import assert_close

DYN = Path(__file__).parent / "data" / "exported" / "bert_tsdyn.onnx"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _feeds(seq: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - seq // 4 :] = 0  # padding at the end
    return {
        "input_ids": rng.integers(0, 100, (1, seq)).astype(np.int64),
        "attention_mask": mask,
        "token_type_ids": (np.arange(seq) >= seq // 2).astype(np.int64)[None],
    }


@pytest.mark.parametrize("seq", [8, 32])
def test_pinned_dynamic_export_matches_onnxruntime(seq: int) -> None:
    """One pin (input_ids) fixes 'seq' in the other two inputs as well."""
    feeds = _feeds(seq)
    sess = ort.InferenceSession(str(DYN), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    m = autofusion.compile(DYN, input_shapes={"input_ids": [1, seq]}, threads=1, cache=False)
    try:
        got = m.run(feeds)
    finally:
        m.close()
    for name, want in ref.items():
        assert 0.1 <= float(np.abs(want).max()) <= 10, name
        assert_close(got[name], want, f"seq {seq}: {name}")


def test_pins_are_part_of_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path / "cache"))
    a = autofusion.compile(DYN, input_shapes={"input_ids": [1, 8]}, threads=1)
    b = autofusion.compile(DYN, input_shapes={"input_ids": [1, 12]}, threads=1)
    try:
        assert a.directory != b.directory
        assert a.run(_feeds(8))["last_hidden_state"].shape == (1, 8, 32)
        assert b.run(_feeds(12))["last_hidden_state"].shape == (1, 12, 32)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    ("pins", "needles"),
    [
        (
            {"input_ids": [1, 8, 2]},
            ["input 'input_ids' has rank 3", "[1, 8, 2]", "declares rank 2: ['batch', 'seq']"],
        ),
        (
            {"input_ids": [2, 8], "token_type_ids": [3, 8]},
            ["disagree on dimension 'batch'", "2 for input 'input_ids'", "3 for input"],
        ),
        ({"nope": [1, 8]}, ["input_shapes names 'nope'", "not graph inputs", "input_ids"]),
        (
            {"input_ids": [1, 8], "attention_mask": [1, 16]},
            ["disagree on dimension 'seq'", "8 for input 'input_ids'", "16 for input"],
        ),
        ({"input_ids": "1x8"}, ["input_shapes['input_ids']", "sequence of ints"]),
        ({"input_ids": [1, -8]}, ["input_shapes['input_ids']", "positive integers"]),
        ({"input_ids": [1, 0]}, ["input_shapes['input_ids']", "positive integers"]),
        ({"input_ids": [1, 8.0]}, ["input_shapes['input_ids']", "positive integers"]),
        ({"input_ids": [1, True]}, ["positive integers"]),
        ({3: [1, 8]}, ["input names must be strings"]),
    ],
)
def test_bad_pins_are_one_clear_error(pins: dict, needles: list[str]) -> None:
    with pytest.raises(AutofusionError) as e:
        autofusion.compile(DYN, input_shapes=pins, cache=False)
    assert_clean_api_error(e, *needles)


def test_pin_disagreeing_with_a_static_dim_is_one_clear_error() -> None:
    static = DYN.with_name("bert_ts.onnx")  # declares [1, 16]
    with pytest.raises(AutofusionError) as e:
        autofusion.compile(static, input_shapes={"input_ids": [2, 8]}, cache=False)
    assert_clean_api_error(e, "input 'input_ids' has size 2 in dim 0", "declares 1", "[1, 16]")


def test_unpinned_dynamic_input_names_the_way_to_pin_it() -> None:
    """The importer needs pins (autofusion.compile() without them specialises per run shape:
    test_dynamic_model.py)."""
    from autofusion.frontend import import_onnx

    with pytest.raises(AutofusionError) as e:
        import_onnx(DYN, progress=False)
    assert_clean_api_error(e, "dynamic dimension 'batch'", "--input-shape input_ids=DIMS")


@pytest.mark.parametrize(
    ("spec", "want"),
    [("x=1x128", ("x", (1, 128))), ("a=b=2,3", ("a=b", (2, 3))), ("s=", ("s", ())),
     ("z=4x1", ("z", (4, 1)))],
)  # fmt: skip
def test_shape_spec_parsing(spec: str, want: tuple) -> None:
    assert parse_shape_spec(spec) == want
    assert check_input_shapes({want[0]: list(want[1])}) == {want[0]: want[1]}


def test_numpy_integer_dims_are_accepted() -> None:
    assert check_input_shapes({"x": [np.int64(1), np.int32(8)]}) == {"x": (1, 8)}


def test_compile_cli_with_pins(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_tool("compile", [str(DYN), "-o", str(out), "--input-shape", "input_ids=1x16"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert (out / "libmodel.so").is_file()
    c = (out / "model.c").read_text()
    for i in range(3):  # the pin reached every input sharing 'seq'
        assert f"af_input_shape_{i}[] = {{INT64_C(1), INT64_C(16)}}" in c


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--input-shape", "input_ids=1xa"], ["--input-shape 'input_ids=1xa'", "joined by 'x'"]),
        (["--input-shape", "input_ids=1x0"], ["--input-shape 'input_ids=1x0'", "positive"]),
        (["--input-shape", "input_ids"], ["expected NAME=DIMS"]),
        (["--input-shape", "input_ids=1x8", "--input-shape", "input_ids=1x9"], ["given twice"]),
        (
            ["--input-shape", "input_ids=2x8", "--input-shape", "attention_mask=3x8"],
            ["disagree on dimension 'batch'", "2 for input 'input_ids'", "3 for input"],
        ),
        (
            [],
            [
                "dynamic input dimensions",
                "'batch' 1..4096 (default) in input_ids[0]",
                "'seq' 1..4096 (default) in input_ids[1]",
                "--input-shape input_ids=<batch>x<seq>",
                "autofusion.compile()",
            ],
        ),
        (
            ["--input-shape", "input_ids=1x9", "--dynamic", "seq=1..8"],
            ["input 'input_ids' dim 1 (symbol 'seq') is 9", "range 1..8 (--dynamic)"],
        ),
        (["--dynamic", "sq=1..8"], ["--dynamic declares a range for 'sq'", "symbols: batch, seq"]),
        (["--dynamic", "seq=8..1"], ["--dynamic 'seq=8..1'", "1 <= LO <= HI"]),
        (["--dynamic", "seq:1..8"], ["expected SYM=LO..HI"]),
    ],
)
def test_compile_cli_bad_pins(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    out = tmp_path / "out"
    assert_clean_cli_error(run_tool("compile", [str(DYN), "-o", str(out), *args]), *needles)
    assert_nothing_written(out)


def test_bench_cli_with_a_pin() -> None:
    proc = run_tool("bench", [str(DYN), "--input-shape", "input_ids=1x12", "--runs", "2",
                              "--warmup", "1", "--threads", "1", "--json"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    assert '"match": true' in proc.stdout.decode()


def test_opt_takes_pins_and_zoo_models() -> None:
    proc = run_tool("opt", [str(DYN), "--input-shape", "input_ids=1x8", "-p", "canonicalize-nn"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert "tensor<1x8xi64>" in proc.stdout.decode()
    proc = run_tool("opt", ["zoo:tiny_cnn", "-p", "canonicalize-nn"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert "nn.conv" in proc.stdout.decode()
    assert_clean_cli_error(run_tool("opt", ["zoo:nope"]), "unknown zoo model 'nope'")
    assert_clean_cli_error(
        run_tool("opt", ["--input-shape", "x=1"], stdin="builtin.module {}\n"),
        "--input-shape applies to ONNX input",
    )


@pytest.mark.parametrize("tool", ["opt", "compile", "bench"])
def test_version(tool: str) -> None:
    proc = run_tool(tool, ["--version"])
    assert proc.returncode == 0, proc.stderr.decode()
    from importlib.metadata import version

    want = f"autofusion {autofusion.__version__} (xdsl {version('xdsl')})"
    assert proc.stdout.decode().strip() == want
