"""The estimate a run prints before it starts, and the throughput it keeps afterwards."""

import re

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles import cli
from gpuensembles.core import estimate
from gpuensembles.models.josephson import estimates, rates, theory


def _work(amount, kind="test kernel"):
    return estimate.Work(amount, "steps", kind, "a test", cpu_rate=1e6, gpu_rate=1e9, advice="a GPU")


def test_a_run_over_the_threshold_says_how_long_it_will_take(capsys, monkeypatch):
    monkeypatch.setattr(estimate.numba.config, "NUMBA_NUM_THREADS", 2)
    seconds = estimate.announce(_work(2e6 * 3 * 3600), "cpu")  # 3 h at 2e6 steps/s
    err = capsys.readouterr().err
    assert seconds == pytest.approx(3 * 3600)
    assert re.fullmatch(r"gpuensembles: estimate: about 3 h for ~2.2e\+10 steps \(a test\) at 2e\+06 steps/s "
                        r"\(default for 2 CPU threads\); consider a GPU\n", err), err
    estimate.announce(_work(2e6 * 0.5 * estimate.ANNOUNCE_SECONDS), "cpu")
    estimate.announce(_work(2e6 * 60), "cpu", progress=False)
    assert capsys.readouterr().err == ""  # a short run, and a run asked to be quiet, say nothing


def test_the_throughput_measured_here_replaces_the_default_for_runs_of_about_that_size():
    work = _work(5e7)
    assert estimate.throughput(work, "cpu")[1].startswith("default")
    estimate.record(work, "cpu", 5e7, 2.0)
    assert estimate.throughput(work, "cpu") == (2.5e7, "measured on this machine")
    assert estimate.throughput(_work(3e8), "cpu")[0] == 2.5e7  # the next decade still uses it
    assert estimate.throughput(_work(5e10), "cpu")[1].startswith("default")  # launch costs differ: not this one
    assert estimate.throughput(_work(5e7, "another kernel"), "cpu")[1].startswith("default")
    estimate.record(work, "cpu", 5e7, estimate.MIN_TIMED_SECONDS / 2)  # too short to time: kept as it was
    assert estimate.throughput(work, "cpu")[0] == 2.5e7


def test_a_run_inside_a_run_leaves_the_estimate_and_the_timing_to_the_outer_one(capsys, monkeypatch):
    from gpuensembles.core.progress import starting

    monkeypatch.setattr(estimate, "ANNOUNCE_SECONDS", 0.0)
    recorded = []
    monkeypatch.setattr(estimate, "record", lambda work, backend, amount, elapsed: recorded.append(work.kind))
    with estimate.timed(_work(1e3, "outer"), "cpu") as outer:
        with estimate.timed(_work(1e3, "inner"), "cpu") as inner:
            starting()
            inner.ran(np.zeros(1))
        outer.ran(np.zeros(1))
    assert capsys.readouterr().err.count("estimate:") == 1
    assert recorded == ["outer"]


def test_a_lazy_result_is_not_timed(monkeypatch):
    import dask.array as da

    recorded = []
    monkeypatch.setattr(estimate, "record", lambda *args: recorded.append(args))
    with estimate.timed(_work(1e3), "cpu", progress=False) as clock:
        clock.ran(da.zeros(3))
    assert recorded == []


def test_the_escape_estimate_follows_the_mean_escape_time_of_theory():
    table = np.array([[1.0, 0.05, 0.5, D, 0.001] for D in (0.004, 0.008)])
    work = estimates.escape_work(table, 256, 10**9, "underdamped", "euler", "float32")
    expected = sum(256 / theory.escape_rate(0.5, V0=1.0, damping=0.05, theta=D / 0.05) / 0.001 for D in (0.004, 0.008))
    assert work.amount == pytest.approx(expected)
    capped = estimates.escape_work(table, 256, 1000, "underdamped", "euler", "float32")
    assert capped.amount == 2 * 256 * 1000  # no run goes past max_steps


@pytest.mark.parametrize("rel_error", [0.1, 0.3])
def test_the_expected_steps_lie_within_a_factor_two_of_those_run(rel_error):
    """The estimate's step count against the steps the runs took: escape times, a ramp, and rates by both methods."""
    kw = dict(model="overdamped", damping=1.0, D=0.1, h=0.01, backend="cpu", progress=False, seed=4)
    ds = ge.escape_times(gamma=0.5, realizations=400, **kw)
    table = np.array([[1.0, 1.0, 0.5, 0.1, 0.01]])
    assert 0.5 < estimates.escape_work(table, 400, 10**9, "overdamped", "euler", "float32").amount / int(
        ds.steps.sum()) < 2
    gammas = [0.3, 0.8]  # a barrier of 5.8 D (forward flux) and of 0.5 D (direct)
    rated = ge.escape_rates(gamma=gammas, rel_error=rel_error, **kw)
    table = np.array([[1.0, 1.0, g, 0.1, 0.01] for g in gammas])
    work = rates.expected_work(table, rated.method.values, rel_error, "overdamped", "euler", "float32")
    ratio = work.amount / int(rated.steps.sum())
    assert 0.5 < ratio < 2, (ratio, rated.steps.values)


def test_the_command_line_prints_the_estimate_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(estimate, "ANNOUNCE_SECONDS", 0.0)
    argv = ["escape-times", "--damping", "1", "--gamma", "0.5", "--D", "0.3", "--h", "0.01", "--model", "overdamped",
            "--realizations", "8", "--seed", "1", "--backend", "cpu", "-o", str(tmp_path / "x.nc")]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert re.search(r"estimate: about [\d.]+ s for ~[\d.e+]+ steps \(mean escape time up to [\d.e+]+ from the exact "
                     r"overdamped MFPT, capped at max_steps\)", err), err


def test_a_large_grid_computes_theory_at_its_highest_barriers_and_scales_the_rest(monkeypatch):
    grid = [(g, D) for g in np.linspace(0.2, 0.8, 12) for D in np.linspace(0.005, 0.05, 12)]
    table = np.array([[1.0, 0.05, g, D, 0.001] for g, D in grid])
    computed = []
    exact_time = estimates._mean_time
    monkeypatch.setattr(estimates, "_mean_time", lambda *args: computed.append(args) or exact_time(*args))
    work = estimates.escape_work(table, 100, 10**12, "underdamped", "euler", "float32")
    assert len(computed) == estimates.MAX_THEORY_POINTS
    monkeypatch.setattr(estimates, "MAX_THEORY_POINTS", table.shape[0])
    every = estimates.escape_work(table, 100, 10**12, "underdamped", "euler", "float32")
    assert work.span == every.span  # the slowest point is among those computed
    assert work.amount == pytest.approx(every.amount, rel=0.05)  # Arrhenius scaling of the others
