"""NetCDF round trip, the command line, and import hygiene."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles import cli


@pytest.fixture(scope="module")
def result():
    return ge.escape_times(damping=0.05, gamma=0.5, D=[0.02, 0.03], h=0.004, realizations=16, seed=4, backend="cpu",
                           max_steps=20_000)


def test_netcdf_round_trip_loses_nothing(result, tmp_path):
    path = tmp_path / "fpt.nc"
    result.to_netcdf(path)
    back = ge.open_dataset(path).load()
    xr.testing.assert_identical(back, result)
    assert back.escaped.dtype == bool
    assert back.attrs == result.attrs
    for name in result.variables:
        assert back[name].attrs == result[name].attrs


def test_cli_writes_netcdf_and_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "cli.nc"
    cli.main(["escape-times", "--damping", "0.05", "--gamma", "0.5", "--D", "0.02", "0.03", "--h", "0.004",
              "--realizations", "32", "--seed", "1", "--backend", "cpu", "--no-progress", "-o", str(out),
              "--overwrite"])
    text = capsys.readouterr().out
    ds = ge.open_dataset(out)
    assert ds.steps.shape == (2, 32) and int(ds.attrs["seed"]) == 1
    assert "steps/s" in text and "0.03" in text and "mean" in text
    assert "s not counted" in text  # the rate leaves compilation out, and says so
    same = ge.escape_times(damping=0.05, gamma=0.5, D=[0.02, 0.03], h=0.004, realizations=32, seed=1, backend="cpu")
    np.testing.assert_array_equal(ds.steps.values, same.steps.values)


def test_summary_says_what_its_rate_counts(result, capsys):
    from gpuensembles.core.commands import Seconds, header

    header(result, Seconds(2.0, 1.5), 4e9, "steps", "x.nc")
    header(result, Seconds(3.0, None), 6e9, "steps", "x.nc")
    lines = capsys.readouterr().out.splitlines()
    assert "in 2.00 s (2.000e+09 steps/s; compiling 1.50 s not counted)" in lines[1]
    assert "in 3.00 s (2.000e+09 steps/s; wall time, the workers' compiling included)" in lines[3]


def test_cli_reports_bad_input_as_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["escape-times", "--damping", "0.05", "--gamma", "1.2", "--D", "0.02", "--h", "0.004",
                  "--realizations", "4", "-o", str(tmp_path / "x.nc")])
    assert exit_info.value.code == 2
    assert "gamma must lie in" in capsys.readouterr().err


def test_import_does_not_touch_cuda():
    code = "import sys, gpuensembles; print(any(m == 'numba.cuda' or m.startswith('numba.cuda.') for m in sys.modules))"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


def test_console_script_help():
    out = subprocess.run([sys.executable, "-m", "gpuensembles.cli", "--help"], capture_output=True, text=True,
                         check=True)
    assert "escape-times" in out.stdout


def test_cli_switching_preset_writes_netcdf_and_plot(tmp_path, capsys):
    out, png = tmp_path / "sc.nc", tmp_path / "sc.png"
    cli.main(["switching-currents", "--preset", "li2007", "--sweep-rate", "2e8", "--realizations", "16", "--seed", "2",
              "--backend", "cpu", "--no-progress", "-o", str(out), "--plot", str(png)])
    text = capsys.readouterr().out
    ds = ge.open_dataset(out)
    assert ds.switching_current_A.attrs["units"] == "A" and ds.attrs["physical_sweep_rate"] == 2e8
    assert "mean_A" in text and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_voltage_criterion_and_retrapping(tmp_path, capsys):
    """--criterion voltage reaches the run function and the summary; retrapping-currents writes, summarizes, plots;
    --running-wells without the voltage criterion is refused, naming it."""
    out = tmp_path / "v.nc"
    cli.main(["switching-currents", "--preset", "li2007", "--sweep-rate", "2e8", "--criterion", "voltage",
              "--running-wells", "20", "--realizations", "8", "--seed", "2", "--backend", "cpu", "--no-progress",
              "-o", str(out), "--overwrite"])
    assert "criterion: voltage (20 wells)" in capsys.readouterr().out
    ds = ge.open_dataset(out)
    assert ds.attrs["criterion"] == "voltage" and int(ds.attrs["running_wells"]) == 20
    rc, png = tmp_path / "r.nc", tmp_path / "r.png"
    cli.main(["retrapping-currents", "--preset", "li2007", "--sweep-rate", "2e8", "--h", "1e-3", "--realizations",
              "8", "--seed", "2", "--backend", "cpu", "--no-progress", "-o", str(rc), "--plot", str(png)])
    text = capsys.readouterr().out
    assert "retrapped 8" in text and "mean_A" in text and png.stat().st_size > 10_000
    assert ge.open_dataset(rc).retrapping_current_A.attrs["units"] == "A"
    with pytest.raises(SystemExit):
        cli.main(["switching-currents", "--preset", "li2007", "--running-wells", "5", "--realizations", "2",
                  "--backend", "cpu", "-o", str(tmp_path / "x.nc")])
    assert "--running-wells applies to --criterion='voltage'" in capsys.readouterr().err


def test_cli_switching_normalized_and_mixed_forms(tmp_path, capsys):
    out = tmp_path / "n.nc"
    cli.main(["switching-currents", "--damping", "1", "--D", "0.1", "--dgamma", "2e-5", "--h", "0.02",
              "--gamma-start", "0.2", "--realizations", "8", "--backend", "cpu", "--no-progress", "-o", str(out),
              "--overwrite"])
    assert ge.open_dataset(out).switched.all()
    with pytest.raises(SystemExit):
        cli.main(["switching-currents", "--preset", "li2007", "--D", "0.1", "--realizations", "2", "-o", str(out),
                  "--overwrite"])
    assert "either the SI options" in capsys.readouterr().err


def test_cli_switching_rates_method(tmp_path, capsys, monkeypatch):
    """--method rates (the model's rate formula standing in for the rate simulations): several sweep rates
    become a dimension, the summary counts the simulated steps and names the adiabaticity, the plot draws."""
    from gpuensembles.models.josephson import switching_from_rates as run
    from gpuensembles.models.josephson import theory

    def formula(*, V0, damping, D, h, model, integrator, rel_error, criterion, running_wells, seed, dtype, backend,
                progress, store):
        rate = theory.rate_formula(model, V0, damping, D / damping)
        return lambda g: (rate(g), 0.03 * rate(g), np.full(len(g), 1000, np.int64))

    monkeypatch.setattr(run, "_measured_rates", formula)
    out, png = tmp_path / "r.nc", tmp_path / "r.png"
    cli.main(["switching-currents", "--preset", "li2007", "--sweep-rate", "1", "200", "1e4", "--h", "1e-3",
              "--integrator", "baoab", "--method", "rates", "--realizations", "100", "--seed", "2", "--backend", "cpu",
              "--no-progress", "-o", str(out), "--plot", str(png)])
    text = capsys.readouterr().out
    ds = ge.open_dataset(out)
    assert ds.switching_current_A.dims == ("sweep_rate", "realization") and ds.attrs["method"] == "rates"
    assert "adiabaticity" in text and "escape rates" in text and png.stat().st_size > 10_000
    assert f"{int(ds.rate_steps.sum()):.3e} steps" in text
    with pytest.raises(SystemExit):
        cli.main(["switching-currents", "--damping", "1", "--D", "0.05", "--dgamma", "2e-4", "--h", "0.02",
                  "--model", "overdamped", "--method", "rates", "--realizations", "4", "-o", str(out), "--overwrite"])
    assert "--dgamma = 0.0002 is too fast" in capsys.readouterr().err


def test_cli_chunks_and_store_resume(tmp_path, capsys):
    args = ["escape-times", "--damping", "1", "--gamma", "0.5", "--D", "0.3", "--h", "0.01", "--model", "overdamped",
            "--realizations", "40", "--chunks", "10", "--store", str(tmp_path / "run"), "--backend", "cpu",
            "--no-progress"]
    cli.main(args + ["-o", str(tmp_path / "a.nc")])
    assert len(list((tmp_path / "run").glob("chunk-*.json"))) == 4
    assert "from the store" not in capsys.readouterr().out
    cli.main(args + ["-o", str(tmp_path / "b.nc")])  # no --seed: the store's seed is reused
    # the summary counts only what this call computed: here nothing, so no rate is claimed
    assert "nothing computed in this call" in capsys.readouterr().out
    a, b = ge.open_dataset(tmp_path / "a.nc"), ge.open_dataset(tmp_path / "b.nc")
    assert (int(a.attrs["store_items_reused"]), int(b.attrs["store_items_reused"])) == (0, 40)
    np.testing.assert_array_equal(a.steps.values, b.steps.values)
    assert a.attrs["seed"] == b.attrs["seed"]


def test_mc_solve_command_writes_a_solution(tmp_path, capsys):
    import scipy.io

    from gpuensembles.models.mcls import problems

    A = problems.laplacian_2d(5)
    scipy.io.mmwrite(tmp_path / "A.mtx", A)
    np.save(tmp_path / "b.npy", np.arange(25.0))
    out = tmp_path / "x.nc"
    assert cli.main(["mc-solve", "--matrix", str(tmp_path / "A.mtx"), "--rhs", str(tmp_path / "b.npy"),
                     "--histories", "1e4", "--seed", "4", "--backend", "cpu", "-o", str(out), "--no-progress",
                     "--plot", str(tmp_path / "x.png")]) == 0
    ds = ge.open_dataset(out)
    direct = ge.mc_solve(A, np.arange(25.0), histories=10_000, seed=4, backend="cpu", progress=False)
    np.testing.assert_array_equal(ds.x.values, direct.x.values)
    assert (tmp_path / "x.png").stat().st_size > 0
    assert "transitions/s" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["mc-solve", "--problem", "laplacian-2d", "--size", "4", "--histories", "10", "-o", str(out),
                  "--overwrite"])
    assert exc.value.code == 2


def test_langevin_and_kuramoto_commands(tmp_path, capsys):
    out = tmp_path / "v.nc"
    assert cli.main(["langevin", "--a", "0", "2", "--kT", "0.1", "--h", "0.01", "--steps", "200", "--sample-every",
                     "50", "--histogram", "-2", "2", "--realizations", "8", "--seed", "3", "--backend", "cpu",
                     "-o", str(out), "--plot", str(tmp_path / "v.png"), "--no-progress"]) == 0
    direct = ge.langevin(a=[0.0, 2.0], kT=0.1, h=0.01, steps=200, sample_every=50, histogram=(-2, 2),
                         realizations=8, seed=3, backend="cpu", progress=False)
    np.testing.assert_array_equal(ge.open_dataset(out).x.values, direct.x.values)
    assert "<<v>>" in capsys.readouterr().out
    out = tmp_path / "r.nc"
    assert cli.main(["kuramoto", "--N", "64", "--K", "2", "--h", "0.01", "--steps", "20", "--sample-every", "10",
                     "--backend", "cpu", "-o", str(out), "--plot", str(tmp_path / "r.png"), "--no-progress"]) == 0
    assert ge.open_dataset(out).r.sizes["time"] == 2
    assert (tmp_path / "r.png").stat().st_size > 0 and (tmp_path / "v.png").stat().st_size > 0
    assert "<r> (second half)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["kuramoto", "--N", "1", "--K", "2", "--h", "0.01", "--steps", "20", "--sample-every", "10",
                  "-o", str(out), "--overwrite"])
    assert exc.value.code == 2


def test_ising_command(tmp_path, capsys):
    out = tmp_path / "ising.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the summary's table warned at every run (xarray's merge defaults)
        assert cli.main(["ising", "--L", "4", "8", "--beta", "0.3", "0.5", "--sweeps", "40", "--realizations", "4",
                         "--bins", "4", "--seed", "2", "--backend", "cpu", "-o", str(out), "--plot",
                         str(tmp_path / "u.png"), "--no-progress"]) == 0
    direct = ge.ising(L=[4, 8], beta=[0.3, 0.5], sweeps=40, realizations=4, bins=4, seed=2, backend="cpu",
                      progress=False)
    np.testing.assert_array_equal(ge.open_dataset(out).bin_e.values, direct.bin_e.values)
    assert "e exact" in capsys.readouterr().out and (tmp_path / "u.png").stat().st_size > 0
    with pytest.raises(SystemExit) as exc:
        cli.main(["ising", "--L", "5", "--beta", "0.3", "--sweeps", "10", "-o", str(out), "--overwrite"])
    assert exc.value.code == 2


def test_cli_xorsat_random_and_file_instances(tmp_path, capsys):
    out, png = tmp_path / "tts.nc", tmp_path / "survival.png"
    cli.main(["xorsat", "--N", "24", "30", "--instances", "2", "--instance-seed", "5", "--runs", "3", "--clones", "64",
              "--seed", "1", "--backend", "cpu", "--no-progress", "-o", str(out), "--plot", str(png)])
    text = capsys.readouterr().out
    ds = ge.open_dataset(out)
    assert ds.tts_sweeps.dims == ("N", "instance", "run") and "tau (sweeps)" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    inst = ge.xorsat.random_instances([24, 30], 2, seed=5)
    same = ge.xorsat.solve(inst, clones=64, runs=3, seed=1, backend="cpu", progress=False)
    np.testing.assert_array_equal(ds.tts_sweeps.values, same.tts_sweeps.values)
    path = tmp_path / "one.xnf"
    ge.xorsat.save_instance(ge.xorsat.select_instance(inst, N=30, instance=1), path)
    cli.main(["xorsat", "--instance-file", str(path), "--runs", "3", "--clones", "64", "--seed", "1", "--backend",
              "cpu", "--no-progress", "-o", str(tmp_path / "one.nc")])
    one = ge.open_dataset(tmp_path / "one.nc")
    np.testing.assert_array_equal(one.tts_sweeps.values, same.tts_sweeps.sel(N=30, instance=1).values)
    cli.main(["xorsat", "--N", "24", "--instances", "2", "--runs", "2", "--clones", "64", "--seed", "1", "--backend",
              "cpu", "--no-progress", "-o", str(tmp_path / "one_size.nc")])
    assert "spin updates" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["xorsat", "--N", "24", "--p", "1.5", "-o", str(tmp_path / "x.nc")])
    assert exit_info.value.code == 2 and "p must lie in" in capsys.readouterr().err


def test_escape_rates_command(tmp_path, capsys):
    out = tmp_path / "rates.nc"
    args = ["escape-rates", "--model", "overdamped", "--damping", "1", "--gamma", "0.3", "0.5", "--D", "0.06",
            "--h", "0.05", "--rel-error", "0.3", "--seed", "1", "--backend", "cpu", "--no-progress", "-o", str(out),
            "--plot", str(tmp_path / "rates.png")]
    assert cli.main(args) == 0
    direct = ge.escape_rates(model="overdamped", damping=1.0, gamma=[0.3, 0.5], D=0.06, h=0.05, rel_error=0.3,
                             seed=1, backend="cpu", progress=False)
    back = ge.open_dataset(out)
    np.testing.assert_array_equal(back.rate.values, direct.rate.values)
    assert list(back.method.values) == ["ffs", "ffs"]
    assert "rate_stderr" in capsys.readouterr().out
    assert (tmp_path / "rates.png").stat().st_size > 0
    with pytest.raises(SystemExit) as exc:
        cli.main(["escape-rates", "--gamma", "0.5", "--h", "0.01", "--R", "250", "--damping", "1", "-o", str(out),
                  "--overwrite"])
    assert exc.value.code == 2


def test_import_leaves_heavy_modules_for_first_use():
    # import time is paid by every CLI call and dask worker: what only a run needs waits for it
    code = ("import sys, types, gpuensembles; loaded = lambda m: isinstance(sys.modules.get(m), types.ModuleType) "
            "and type(sys.modules[m]).__name__ != '_LazyModule'; "
            "print([m for m in ('dask', 'distributed', 'scipy.sparse', 'scipy.special', 'scipy.constants') "
            "if loaded(m)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_si_constants_are_the_exact_2019_values():
    from scipy import constants

    from gpuensembles.models.josephson import junction as run

    assert (run.ELEMENTARY_CHARGE, run.HBAR, run.BOLTZMANN) == (constants.e, constants.hbar, constants.k)
