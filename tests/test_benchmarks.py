"""The asv benchmarks and the report script, run once at small size (CPU) so they cannot rot.

These check that each benchmark runs and returns a finite figure with its unit, never a
timing: a rate differenced from two tiny timed calls is noise and may come out negative.
"""

import json
import math

import pytest

from benchmarks import bench_escape_times, bench_switching


def figure(track, *args, unit):
    """Call an asv ``track_*`` method once; check that it gives a finite float in ``unit``."""
    value = track(*args)
    assert isinstance(value, float) and math.isfinite(value), value
    assert track.unit == unit
    return value


def test_track_functions_return_rates():
    bench = bench_escape_times.EscapeTimeThroughput()
    bench.setup("cpu", "float32")
    sizes = dict(bench_escape_times.SIZES)
    bench_escape_times.SIZES["cpu"] = 64
    try:
        figure(bench.track_steps_per_second, "cpu", "float32", unit="steps/s")
        figure(bench_escape_times.NaiveBaselines().track_numpy_vectorised, unit="steps/s")
    finally:
        bench_escape_times.SIZES.update(sizes)


def test_cuda_benchmarks_skip_cleanly_without_gpu():
    bench = bench_escape_times.EscapeTimeThroughput()
    if bench_escape_times.gpu_available():
        bench.setup("cuda", "float32")  # runs for real
    else:
        with pytest.raises(NotImplementedError):  # asv's way to skip
            bench.setup("cuda", "float32")


def test_switching_benchmarks_run_small():
    bench = bench_switching.SwitchingCPU()
    bench.realizations, bench.numpy_realizations = 16, 4  # 4e5 steps each
    figure(bench.track_steps_per_second, unit="steps/s")
    figure(bench.track_numpy_vectorised, unit="steps/s")
    gpu = bench_switching.SwitchingThroughput()
    if bench_escape_times.gpu_available():
        gpu.setup(1 << 20)
    else:
        with pytest.raises(NotImplementedError):
            gpu.setup(1 << 20)


def test_mcls_benchmarks_run_small(capsys):
    from benchmarks import bench_mcls

    bench = bench_mcls.CPUThroughput()
    bench.histories = 2000
    bench.setup()
    figure(bench.track_transitions_per_second, unit="transitions/s")
    seed_case = bench_mcls.SeedCase()
    if bench_escape_times.gpu_available():
        seed_case.setup()
    else:
        with pytest.raises(NotImplementedError):
            seed_case.setup()
    bench_mcls.main(["--quick"])
    out = capsys.readouterr().out
    assert "gpuensembles cpu adjoint collision" in out and "scipy.sparse.linalg.cg" in out


def test_ising_benchmarks_run_small(monkeypatch):
    from benchmarks import bench_ising

    monkeypatch.setitem(bench_ising.CPU_CASES, "ensemble, 64x64", ("multispin", 64, 2, 32, 40))
    bench = bench_ising.IsingThroughput()
    bench.setup("cpu", "ensemble, 64x64")
    figure(bench.track_flips_per_ns, "cpu", "ensemble, 64x64", unit="flips/ns")
    with pytest.raises(NotImplementedError):  # GPU-sized cases are not run on the CPU
        bench.setup("cpu", "multispin, one lattice")


def test_xorsat_benchmarks_run_small(monkeypatch, capsys):
    from benchmarks import bench_xorsat

    monkeypatch.setitem(bench_xorsat.THROUGHPUT, "cpu", (256, 2**8, 16))
    bench = bench_xorsat.XorsatThroughput()
    bench.setup("cpu")
    figure(bench.track_updates_per_ns, "cpu", unit="updates/ns")
    monkeypatch.setitem(bench_xorsat.QUICK, "growth", {24: (2, 2), 30: (2, 2)})
    bench_xorsat.main(["--quick", "--only", "growth"])
    assert "growth: ln tau" in capsys.readouterr().out


def test_one_table_of_every_workload_on_the_cpu(tmp_path, capsys):
    # --quick: tiny sizes on the CPU backend, no events; the GPU run is the same code with events.
    from benchmarks import __main__ as table

    rows = table.main(["--quick", "--repeats", "2", "--json", str(tmp_path / "figures.json")])
    out = capsys.readouterr().out
    assert out.startswith("device: CPU") and "numba-cuda" in out and "| workload" in out
    units = {r.workload.split()[0]: r.package.unit for r in rows}
    assert units == {"ising": "flips/ns", "kuramoto": "oscillator-steps/s", "langevin": "steps/s", "mcls": "s",
                     "escape": "steps/s", "xorsat": "updates/ns"}
    assert len(rows) == 13  # 4 of them the Ising calls users make (two sizes, an ensemble, the README example)
    for row in rows:
        assert len(row.package.values) == 2 and row.package.what == "whole call"  # no events on the CPU
        for figure in (row.package, row.call) + ((row.baseline,) if row.baseline is not None else ()):
            assert all(math.isfinite(v) and v > 0 for v in figure.values), (row.workload, figure)
        if row.baseline is None:  # a naive numba.cuda kernel: reported as not run, never made up
            assert "needs a GPU" in row.baseline_name
        else:
            assert math.isfinite(row.ratio) and math.isfinite(row.spread)
    assert sum(row.baseline is None for row in rows) == 3
    saved = json.loads((tmp_path / "figures.json").read_text())
    assert [r["workload"] for r in saved["rows"]] == [r.workload for r in rows]


def test_table_refuses_what_it_cannot_measure(capsys):
    from benchmarks import __main__ as table

    with pytest.raises(SystemExit):
        table.main(["--quick", "--only", "ising,nonsense"])
    if not bench_escape_times.gpu_available():
        with pytest.raises(SystemExit):  # the GPU table needs a GPU
            table.main([])
    else:
        with pytest.raises(SystemExit):  # and five repeats
            table.main(["--repeats", "3"])


def test_rate_point_benchmark_runs_small():
    from benchmarks import bench_rates

    seconds, ds = bench_rates.rate_point_seconds(6.0, backend="cpu", rel_error=0.3, h=0.05)
    assert math.isfinite(seconds) and seconds > 0
    assert str(ds.method.values) == "ffs" and float(ds.rate) > 0
    assert bench_rates.RatePoint.track_seconds.unit == "s"


def test_phase_diffusion_report_runs_at_its_quick_size(tmp_path):
    """The switching and retrapping pair of ``benchmarks.bench_phase_diffusion`` at its CPU size,
    and the crossover estimate between two temperatures."""
    from benchmarks import bench_phase_diffusion

    text, records = bench_phase_diffusion.pair("cpu", "quick", save=tmp_path)
    assert "retrapping" in text and {r["T"] for r in records} == {0.3, 1.2}
    assert all(math.isfinite(r["mean"]) and r["n"] > 0 for r in records)
    assert len(list(tmp_path.glob("pair_*.nc"))) == 4
    rows = [dict(T=0.5, escape={"mean": 0.6}, retrapping=0.5), dict(T=1.0, escape={"mean": 0.4}, retrapping=0.6)]
    assert bench_phase_diffusion._meeting(rows) == pytest.approx(0.5 + 0.5 * 0.1 / 0.3)  # the gap 0.1, -0.2 crosses 0


def test_phase_diffusion_asv_benchmark_skips_cleanly_without_gpu():
    from benchmarks import bench_escape_times, bench_phase_diffusion

    bench = bench_phase_diffusion.LiVoltageSwitching()
    if bench_escape_times.gpu_available():
        bench.setup("voltage")  # runs for real: the small call that compiles the kernels
        assert bench.kw["criterion"] == "voltage"
    else:
        with pytest.raises(NotImplementedError):  # asv's way to skip
            bench.setup("voltage")


def test_scaling_report_joins_baselines_and_refuses_what_it_cannot_compare(tmp_path, capsys):
    # the report of side-by-side one-GPU runs and a later four-GPU run: efficiency against the
    # run on the fewest GPUs of the same case and size, n/a where there is none
    from benchmarks import scaling

    one = [dict(case="ising", size=10, gpus=1, seconds=100.0, total=5.0)]
    four = [dict(case="ising", size=10, gpus=4, seconds=26.0, total=5.0),
            dict(case="xorsat", size=7, gpus=4, seconds=9.0, total=1.0),
            dict(case="xorsat", size=7, gpus=0, seconds=30.0, total=1.0)]  # the eager run on one GPU
    (tmp_path / "one_ising.json").write_text(json.dumps(one))
    (tmp_path / "four.json").write_text(json.dumps(four))
    scaling.main(["--report", str(tmp_path / "one_*.json"), str(tmp_path / "four.json")])
    rows = capsys.readouterr().out.splitlines()
    assert "| ising | 10 | 4 | 26.0 | 3.85 | 96.2% | n/a | True |" in rows
    assert "| xorsat | 7 | 4 | 9.0 | n/a | n/a (no run on fewer GPUs at this size) | 83.3% | n/a |" in rows
    assert "| xorsat | 7 | eager | 30.0 | | | | |" in rows
    with pytest.raises(ValueError, match="no file matches"):
        scaling.main(["--report", str(tmp_path / "none_*.json")])
    with pytest.raises(ValueError, match="no size for"):
        scaling.main(["--gpus", "4", "--only", "escape_times", "--sizes", str(tmp_path / "one_*.json")])


def test_scaling_sizes_a_run_past_the_fixed_costs_of_a_short_probe():
    # runs of n items take 0.8 s + 1.65 ms n (XORSAT on an H200): the probe of 64 alone, scaled up
    # linearly, gave 18 000 runs for a 240 s target, 30 s of work
    from benchmarks import scaling

    def seconds_of(n):
        return 0.8 + 1.65e-3 * n

    size = scaling._sized(seconds_of, 64, 240.0)
    assert 240.0 - 19 * 0.8 <= seconds_of(size) <= 240.0
    assert scaling._sized(lambda n: 2e-3 * n, 64, 240.0) == 120_000  # time linear in the size: exact


def test_rate_error_calibration_prints_one_row_per_bias(capsys):
    from benchmarks import rate_errors

    rate_errors.main(["--case", "overdamped", "--seeds", "3", "--rel-error", "0.3", "--backend", "cpu"])
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| rate |")]
    assert len(rows) == 3
    ratios = [float(r.split("|")[4]) for r in rows]
    assert all(math.isfinite(x) and x > 0 for x in ratios)
