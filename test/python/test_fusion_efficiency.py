"""benchmarks/fusion_efficiency.py's accounting on made-up profiles: R counts what a fused
kernel absorbed beside its anchors (contractions) and what no fused kernel covers, and
``kept_by_kind`` says, per kind of fused kernel, what it still pays for what it absorbed."""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fusion_efficiency as fe


class K(NamedTuple):
    kernel: str
    origins: tuple[str, ...]
    seconds: float


UNFUSED = [
    K("op1_conv", ("c1",), 1.0e-3),
    K("op2_batch_norm", ("bn1",), 0.2e-3),
    K("op3_relu", ("r1",), 0.1e-3),
    K("op4_conv", ("c2",), 2.0e-3),
    K("op5_add", ("a2",), 0.3e-3),
    K("op6_relu", ("r2",), 0.1e-3),
    K("op7_conv", ("c3",), 1.5e-3),
    K("op8_relu", ("r3",), 0.1e-3),
    K("op9_reshape", ("s",), 0.05e-3),
]
FUSED = [
    K("k1_conv_relu", ("c1", "bn1", "r1"), 1.05e-3),
    K("k4_conv_add_relu", ("c2", "a2", "r2"), 2.25e-3),
    K("k7_conv_relu", ("c3", "r3"), 1.45e-3),
]


def test_split_counts_absorbed_and_removed() -> None:
    split = fe.split_profile(UNFUSED, FUSED)
    r = 0.2 + 0.1 + 0.3 + 0.1 + 0.1 + 0.05
    assert split.removed_share == pytest.approx(r / sum(1e3 * k.seconds for k in UNFUSED))
    assert (split.absorbed, split.eliminated, split.kept) == (5, 1, 3)


def test_kept_by_kind() -> None:
    algos = {"k1_conv_relu": "winograd 56x56", "k7_conv_relu": "winograd 56x56"}
    rows = fe.kept_by_kind(UNFUSED, FUSED, algos)
    by = {r["kind"]: r for r in rows}
    assert set(by) == {"conv_relu winograd 56x56", "conv_add_relu"}
    wg = by["conv_relu winograd 56x56"]
    assert wg["n"] == 2
    assert wg["anchors_ms"] == pytest.approx(2.5)
    assert wg["R_ms"] == pytest.approx(0.4)
    assert wg["kept_ms"] == pytest.approx(0.0)  # +0.05 and -0.05
    add = by["conv_add_relu"]
    assert (add["R_ms"], add["kept_ms"]) == (pytest.approx(0.4), pytest.approx(0.25))
    # the kind that saves least of its R first
    assert [r["kind"] for r in rows] == ["conv_add_relu", "conv_relu winograd 56x56"]
    table = fe.detail_table(rows)
    assert "| conv_add_relu | 1 | 2.000 | 0.400 | +0.250 | 0.62 | - |" in table
    rows[0]["kept_paired_ms"] = 0.125
    assert "| +0.250 | 0.62 | +0.125 |" in fe.detail_table(rows)


def _paired_rounds() -> list[tuple[list[K], list[K]]]:
    """Three rounds: the conv_add_relu 0.25, 0.275 and 0.225 ms over its conv (2.0, 2.2 and
    1.8 ms); the two conv_relu kernels +0.05 and -0.05 every round."""

    def scaled(ks: list[K], f: float, only: str) -> list[K]:
        return [k._replace(seconds=k.seconds * (f if k.kernel == only else 1.0)) for k in ks]

    return [
        (UNFUSED, FUSED),
        (scaled(UNFUSED, 1.1, "op4_conv"), scaled(FUSED, 1.1, "k4_conv_add_relu")),
        (scaled(UNFUSED, 0.9, "op4_conv"), scaled(FUSED, 0.9, "k4_conv_add_relu")),
    ]


def test_kept_paired_takes_per_kernel_medians_of_same_round_differences() -> None:
    """Round by round each fused kernel against its anchors in that round's unfused profile;
    the median over rounds per kernel, summed per kind: the conv_add_relu is 0.225-0.275 ms
    over its conv round by round, 0.25 by the median; the two conv_relu kernels +0.05 and
    -0.05 cancel."""

    algos = {"k1_conv_relu": "winograd 56x56", "k7_conv_relu": "winograd 56x56"}
    kept = fe.kept_paired(_paired_rounds(), algos)
    assert kept["conv_add_relu"] == pytest.approx(0.25)
    assert kept["conv_relu winograd 56x56"] == pytest.approx(0.0)  # +0.05 and -0.05


class _Sleeper:
    """A 'model' whose run takes ``s`` seconds of wall time."""

    def __init__(self, s: float) -> None:
        self.s = s

    def run(self, feeds: object) -> None:
        import time

        time.sleep(self.s)


def test_runs_for_stretches_a_fast_models_round() -> None:
    # 5 ms a run, 100 ms a round: ~20 runs, not the 3 asked for
    assert 12 <= fe.runs_for(_Sleeper(0.005), None, "wall", 3, 0.1) <= 20
    # a run slower than the round: the runs asked for stay
    assert fe.runs_for(_Sleeper(0.02), None, "wall", 3, 0.01) == 3


def test_combine_takes_each_figures_median_over_processes() -> None:
    """``--processes``: each figure is the median of the processes' (a ratio is not recomputed
    from medians), the rounds are pooled, mismatches joined, the kept-by-kind table is the
    median process's by kernel minima, and each process's ratios are listed."""

    def row(ratio: float, paired: float, mins: float, unf: float, tag: str) -> dict:
        return {"model": "m", "threads": 1, "ratio": ratio, "ratio_paired": paired,
                "min_ratio": mins, "unfused_ms": unf, "runs": 10,
                "rounds_ms": {"unfused": [unf], "fused": [unf - 1]},
                "mismatch": ["y"] if tag == "c" else [],
                "kept_by_kind": [{"kind": tag}], "kept_by_kernel": []}  # fmt: skip

    rows = [row(0.9, 0.8, 0.7, 50.0, "a"), row(0.3, 0.6, 0.95, 52.0, "b"),
            row(0.6, 1.0, 0.8, 51.0, "c")]  # fmt: skip
    out = fe.combine(rows)
    assert (out["ratio"], out["ratio_paired"], out["min_ratio"]) == (0.6, 0.8, 0.8)
    assert out["unfused_ms"] == 51.0
    assert out["runs"] == 10
    # counts stay whole numbers with an even number of processes too
    two = fe.combine(rows[:2])
    assert two["threads"] == 1
    assert isinstance(two["threads"], int)
    assert two["ratio"] == pytest.approx(0.6)  # figures: the mean of the middle two
    assert out["model"] == "m"
    assert out["rounds_ms"] == {"unfused": [50.0, 52.0, 51.0], "fused": [49.0, 51.0, 50.0]}
    assert out["mismatch"] == ["y"]
    assert out["kept_by_kind"] == [{"kind": "c"}]
    assert out["ratios"] == [0.9, 0.3, 0.6]
    assert out["min_ratios"] == [0.7, 0.95, 0.8]
    assert out["processes"] == 3


def test_table_shows_each_ratios_range_over_processes() -> None:
    """A combined row's table line gives each ratio's range over the processes after its
    median; a row of one process gives the figure alone."""

    def row(ratio: float, paired: float, mins: float) -> dict:
        return {"model": "m", "threads": 1, "clock": "cpu", "unfused_ms": 50.0,
                "fused_ms": 49.0, "R_ms": 1.2, "saving_ms": 1.0, "ratio": ratio,
                "saving_paired_ms": 1.0, "ratio_paired": paired, "min_R_ms": 1.1,
                "min_saving_ms": 0.9, "min_ratio": mins, "kernels_unfused": 9,
                "kernels_fused": 4, "absorbed": 5, "eliminated": 0, "mb_unfused": 2.0,
                "mb_fused": 1.0, "runs": 10, "rounds_ms": {"unfused": [50.0], "fused": [49.0]},
                "mismatch": [], "kept_by_kind": [], "kept_by_kernel": []}  # fmt: skip

    one = fe.table([row(0.9, 0.8, 0.7)]).splitlines()[-1]
    assert "| 0.90 |" in one
    assert "| 0.80 |" in one
    assert "| 0.70 (1.10) |" in one
    both = fe.combine([row(0.9, 0.8, 0.7), row(0.3, 0.6, 0.95), row(0.6, 1.0, 0.8)])
    line = fe.table([both]).splitlines()[-1]
    assert "| 0.60 (0.30-0.90) |" in line
    assert "| 0.80 (0.60-1.00) |" in line
    assert "| 0.80 (0.70-0.95) (1.10) |" in line


def test_kept_by_kernel_lists_each_fused_kernel_by_paired_medians() -> None:
    """Per fused kernel: its anchors, the medians over rounds of their time, of what it
    absorbed and of its same-round excess over them; most kept first."""
    algos = {"k1_conv_relu": "winograd 56x56", "k7_conv_relu": "winograd 56x56"}
    rows = fe.kept_by_kernel(_paired_rounds(), algos)
    assert [r["kernel"] for r in rows] == ["k4_conv_add_relu", "k1_conv_relu", "k7_conv_relu"]
    add = rows[0]
    assert (add["kind"], add["anchors"]) == ("conv_add_relu", "op4_conv")
    assert add["anchors_ms"] == pytest.approx(2.0)  # median of 2.0, 2.2, 1.8
    assert add["R_ms"] == pytest.approx(0.4)  # the Add and the Relu
    assert add["kept_ms"] == pytest.approx(0.25)  # median of 0.25, 0.275, 0.225
    assert rows[1]["kept_ms"] == pytest.approx(0.05)
    assert rows[2]["kept_ms"] == pytest.approx(-0.05)
    assert rows[1]["kind"] == "conv_relu winograd 56x56"
    # the per-kind sums are kept_paired's
    assert sum(r["kept_ms"] for r in rows if r["kind"].startswith("conv_relu")) == pytest.approx(
        fe.kept_paired(_paired_rounds(), algos)["conv_relu winograd 56x56"]
    )


def test_combine_kernels_takes_each_kernels_median_over_processes() -> None:
    def row(kernel: str, kept: float, anchors: float = 1.0) -> dict:
        return {"kernel": kernel, "kind": "k", "anchors": "a", "anchors_ms": anchors,
                "R_ms": 0.1, "kept_ms": kept}  # fmt: skip

    out = fe.combine_kernels([
        [row("x", 0.3), row("y", 0.0)],
        [row("y", 0.2, 3.0), row("x", -0.1)],
        [row("x", 0.1), row("y", 0.4, 2.0)],
    ])  # fmt: skip
    assert [r["kernel"] for r in out] == ["y", "x"]  # medians 0.2 and 0.1
    assert out[0]["kept_ms"] == pytest.approx(0.2)
    assert out[0]["anchors_ms"] == pytest.approx(2.0)
    assert out[1]["kept_ms"] == pytest.approx(0.1)


def test_kernel_table_shows_both_ends_and_the_sums() -> None:
    rows = [{"kernel": f"k{i}", "kind": "conv_relu", "anchors": f"op{i}_conv",
             "anchors_ms": 1.0, "R_ms": 0.01 * i, "kept_ms": 0.1 - 0.01 * i}
            for i in range(10)]  # fmt: skip
    table = fe.kernel_table(rows, 2)
    lines = table.splitlines()
    assert [ln.split(" | ")[0] for ln in lines[2:]] == ["| k0", "| k1", "| k8", "| k9", "| all 10"]
    assert "| k0 | conv_relu | op0_conv | 1.000 | 0.000 | +0.100 |" in table
    assert lines[-1] == "| all 10 | | | | 0.450 | +0.550 |"
    assert len(fe.kernel_table(rows[:3], 2).splitlines()) == 2 + 3 + 1  # all shown


def test_auto_clock_is_cpu_time_at_one_thread_and_the_busiest_threads_at_more() -> None:
    """``--clock auto`` (the default): one run of ``--threads 1,2`` times each row as the
    issue-16 notes do (process CPU time at one thread, where the wall clock counts whatever
    else ran on the core; the busiest thread's on-CPU time at two, where process CPU time
    would count OpenMP's spinning); an explicit clock is used as given."""
    assert fe.row_clock("auto", 1) == "cpu"
    assert fe.row_clock("auto", 2) == "threads"
    assert fe.row_clock("auto", 8) == "threads"
    for clock in ("wall", "cpu", "threads"):
        assert fe.row_clock(clock, 1) == clock
        assert fe.row_clock(clock, 2) == clock


def test_cpu_clock_refuses_more_than_one_thread(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        fe.main(["--models", "x.onnx", "--threads", "1,2", "--clock", "cpu"])
    assert e.value.code == 2
    assert "--clock cpu needs --threads 1" in capsys.readouterr().err


@pytest.mark.parametrize("threads", ["1,two", "0", "2,-1"])
def test_bad_thread_counts_are_one_message(
    threads: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        fe.main(["--models", "x.onnx", "--threads", threads])
    assert e.value.code == 2
    assert f"--threads {threads}:" in capsys.readouterr().err


def test_run_interleaving_cancels_a_drift_that_blocks_put_on_one_build() -> None:
    """``time_rounds``: the machine slows down steadily (each run 10 us slower than the one
    before) while the fused build is 1 ms faster. Paired run by run the saving is the 1 ms;
    in blocks of 10 runs each round's difference carries the drift of a block (+-0.1 ms
    a round, one sign more often with an odd number of rounds)."""
    clock = [0]
    log: list[tuple[str, bool]] = []

    def timer(fused: bool) -> float:
        clock[0] += 1
        log.append(("timed", fused))
        return (0.050 if fused else 0.051) + 10e-6 * clock[0]

    def warm(fused: bool) -> None:
        clock[0] += 1
        log.append(("warm", fused))

    builds = {False: False, True: True}
    times, diffs = fe.time_rounds(builds, timer, warm, 10, 5, "run")
    assert len(diffs) == 50
    assert [len(times[b]) for b in (False, True)] == [5, 5]
    # each timed run right after an untimed one of its own build; pairs' orders flipped
    assert log[::2] == [("warm", b) for _, b in log[1::2]]
    assert [b for _, b in log[1:8:2]] == [False, True, True, False]
    assert fe.statistics.median(diffs) == pytest.approx(1e-3, abs=1e-9)
    clock[0] = 0
    times, diffs = fe.time_rounds(builds, timer, lambda m: None, 10, 5, "block")
    assert len(diffs) == 5
    assert abs(fe.statistics.median(diffs) - 1e-3) >= 0.09e-3
    # the per-round medians are each build's runs of that round in both modes
    assert times[False][0] - times[True][0] == pytest.approx(diffs[0])


_CROSS = "x86-64-v2" if platform.machine() in ("aarch64", "arm64") else "aarch64"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--models", "no_such_model"], "unknown zoo model 'no_such_model'"),
        (["--models", "bert_base@long"], "bert_base@long: the size after @ must be a whole"),
        (["--models", "/nonexistent/m.onnx"], "/nonexistent/m.onnx"),
        # a build for the other architecture than this machine's
        (["--models", "tiny_cnn", "--cpu", _CROSS], "cannot be loaded"),
    ],
)
@pytest.mark.parametrize("processes", ["1", "2"])
def test_bad_models_and_cpus_are_one_message(
    argv: list[str], says: str, processes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model that cannot be had or an instruction set this machine cannot load: exit 1 with
    one message naming it, before anything is timed, and no traceback -- measured here
    (``--processes 1``) or in fresh processes, whose one message the parent gives as its own
    (not the child's whole stderr)."""
    assert fe.main([*argv, "--threads", "1", "--processes", processes]) == 1
    err = capsys.readouterr().err
    assert says in err
    assert "fusion_efficiency: " in err
    assert "Traceback" not in err
    assert "runs a round" not in err  # nothing timed


def test_processes_below_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        fe.main(["--models", "tiny_cnn", "--threads", "1", "--processes", "0"])
    assert e.value.code == 2
    assert "--processes 0: at least 1" in capsys.readouterr().err


def test_unknown_cpu_is_refused_by_the_option_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """--cpu takes autofusion-compile's choices: anything else is a usage error (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        fe.main(["--models", "tiny_cnn", "--cpu", "bogus"])
    assert exc.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
