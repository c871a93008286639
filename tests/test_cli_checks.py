"""The command line keeps its word: checks before work, errors in the options' names, no lost results."""

import errno
import re

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles import cli
from gpuensembles.core import backend, io
from gpuensembles.core.registry import registered
from gpuensembles.models.josephson import cli as josephson_cli

ESCAPE = ["escape-times", "--damping", "1", "--gamma", "0.5", "--D", "0.3", "--h", "0.01", "--model", "overdamped",
          "--realizations", "8", "--seed", "1", "--backend", "cpu"]


@pytest.fixture
def no_run(monkeypatch):
    """Fail the test if the run function is called (a check of the command line must come first)."""
    monkeypatch.setattr(josephson_cli, "escape_times", lambda **kw: pytest.fail("the run started"))
    monkeypatch.setattr(josephson_cli, "switching_currents", lambda **kw: pytest.fail("the run started"))


@pytest.fixture
def no_kernel(monkeypatch):
    """Fail the test if a kernel is compiled or run (the run function's own checks must come first)."""
    from gpuensembles.core import engine

    monkeypatch.setattr(engine, "first_passage_runner", lambda *a: pytest.fail("a kernel started"))


def usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, f"not one line: {err!r}"
    return err


@pytest.mark.parametrize("where, message", [
    ("missing/out.nc", r"-o/--output '.*missing/out.nc': the folder '.*missing' does not exist"),
    ("a-file.txt/out.nc", r"-o/--output '.*a-file.txt/out.nc': '.*a-file.txt' is a file, not a folder"),
    (".", r"-o/--output '.*' is a folder; give a file name"),
])
def test_an_output_that_cannot_be_written_fails_before_the_run(where, message, tmp_path, capsys, no_run):
    (tmp_path / "a-file.txt").write_text("")
    err = usage_error(ESCAPE + ["-o", str(tmp_path / where)], capsys)
    assert re.search(message, err), err


def test_plot_and_store_paths_are_checked_before_the_run(tmp_path, capsys, no_run):
    (tmp_path / "a-file.txt").write_text("")
    err = usage_error(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--plot", str(tmp_path / "no" / "x.png")], capsys)
    assert "--plot" in err and "does not exist" in err
    err = usage_error(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--store", str(tmp_path / "a-file.txt" / "run")],
                      capsys)
    assert "--store" in err and "is a file, not a directory" in err


def test_plot_without_matplotlib_is_refused_before_the_run(tmp_path, capsys, no_run, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    err = usage_error(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--plot", str(tmp_path / "x.png")], capsys)
    assert "--plot needs matplotlib" in err and "gpuensembles[plot]" in err


def test_a_write_that_fails_after_the_run_saves_the_result_elsewhere(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "out.nc"
    real = io.write_netcdf

    def disk_full(ds, path):
        if str(path) == str(target):
            open(path, "wb").write(b"partial")  # what a write cut short leaves
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(ds, path)

    monkeypatch.setattr(io, "write_netcdf", disk_full)
    assert cli.main(ESCAPE + ["-o", str(target), "--no-progress"]) == 1
    captured = capsys.readouterr()
    saved = list(tmp_path.glob("gpuensembles-escape-times-*.nc"))
    assert len(saved) == 1 and not target.exists()
    assert "No space left on device" in captured.err and f"saved to {saved[0]}" in captured.err
    assert str(saved[0]) in captured.out  # the summary names where the result is
    direct = ge.escape_times(damping=1.0, gamma=0.5, D=0.3, h=0.01, model="overdamped", realizations=8, seed=1,
                             backend="cpu", progress=False)
    np.testing.assert_array_equal(ge.open_dataset(saved[0]).steps.values, direct.steps.values)


def test_when_the_current_folder_fails_too_the_result_goes_to_the_temporary_folder(tmp_path, monkeypatch, capsys):
    import tempfile

    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    real = io.write_netcdf

    def only_tmp(ds, path):
        if not str(path).startswith(str(tmp_path / "tmp")):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(ds, path)

    monkeypatch.setattr(io, "write_netcdf", only_tmp)
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "out.nc"), "--no-progress"]) == 1
    assert len(list((tmp_path / "tmp").glob("gpuensembles-escape-times-*.nc"))) == 1
    assert "Permission denied" in capsys.readouterr().err


def test_negative_numbers_are_values_and_the_error_names_the_option(tmp_path, capsys, no_kernel):
    err = usage_error(["switching-currents", "--preset", "li2007", "--sweep-rate", "-2e7", "--realizations", "4",
                       "-o", str(tmp_path / "x.nc")], capsys)
    assert "--sweep-rate must lie in [1e-06, 1000000000000.0], got -20000000.0 s-1" in err
    assert "estimate" not in err


@pytest.mark.parametrize("argv, message", [
    (["mc-solve", "--problem", "laplacian-2d", "--size", "-3", "--histories", "1e4"], "--size must be an integer >= 1"),
    (["escape-times", "--damping", "0.05", "--gamma", "1.2", "--D", "0.02", "--h", "0.004", "--realizations", "4"],
     "--gamma must lie in"),
    (["escape-times", "--damping", "0.05", "--gamma", "0.5", "--D", "0.02", "--h", "0.5", "--realizations", "4"],
     "--h is too large for --V0 = 1, --damping = 0.05, --gamma = 0.5, --h = 0.5: h"),
    (["escape-times", "--damping", "0.05", "--gamma", "0.5", "--D", "0.02", "--h", "0.004", "--realizations", "4",
      "--max-steps", "1e19"], r"--max-steps must be an integer in \[1, 2\*\*62\]"),
    (["langevin", "--h", "0.01", "--steps", "10", "--sample-every", "3", "--realizations", "2"],
     r"--steps \(10\) must be a multiple of --sample-every \(3\)"),
    (["xorsat", "--N", "24", "--instance-seed", "-1"], r"--instance-seed must be an integer in \[0, 2\*\*32 - 1\]"),
    (["xorsat", "--N", "24", "--instances", "0"], "--instances must be an integer >= 1"),
    (["xorsat", "--instance-file", "nowhere.xnf"], "--instance-file: path 'nowhere.xnf' is not a file"),
    (["mc-solve", "--matrix", "nowhere.mtx", "--histories", "1e4"], "--matrix 'nowhere.mtx' cannot be read"),
    (["ising", "--L", "4", "--beta", "0.4", "--sweeps", "10", "--realizations", "1e12"],
     r"--realizations=1000000000000 at 1 values of beta .* needs about [\d.]+ TiB of memory"),
    (["kuramoto", "--N", "64", "--K", "2", "--h", "0.01", "--steps", "20", "--sample-every", "10", "--seed", "-1"],
     r"--seed must be an integer in \[0, 2\*\*32 - 1\]"),
])
def test_errors_name_the_options_the_user_typed(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = usage_error(argv + ["--backend", "cpu", "-o", str(tmp_path / "x.nc")], capsys)
    assert re.search(message, err), err


def test_every_check_runs_before_the_work_estimate(tmp_path, capsys, no_kernel):
    err = usage_error(["switching-currents", "--preset", "li2007", "--sweep-rate", "2e7", "--realizations", "4",
                       "--seed", "-1", "-o", str(tmp_path / "x.nc")], capsys)
    assert "--seed must be" in err and "estimate" not in err


def test_no_progress_bar_in_a_log_file_unless_asked(tmp_path, capsys):
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--overwrite"]) == 0  # stderr is not a terminal here
    assert "\r" not in capsys.readouterr().err
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--progress", "--overwrite"]) == 0
    assert "realizations" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(e.command.name for e in registered()))
def test_help_shows_no_rest_markup_and_keeps_the_examples_lines(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = capsys.readouterr().out
    assert not re.search(r"``|:\w+:`|::|\.\. ", text), text
    assert f"example:\n  gpuensembles {command} " in text
    examples = [line for line in cli.EXAMPLES.splitlines() if line.startswith(f"  gpuensembles {command} ")]
    assert examples and all(line in text.splitlines() for line in examples)
    if examples[0].endswith("\\"):  # a continued example keeps its line break
        assert examples[0] + "\n      --" in text


def test_main_help_lists_the_examples_line_by_line(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert not re.search(r"``|:\w+:`", text)
    assert all(line in text for line in cli.EXAMPLES.splitlines())


def test_progress_counts_what_a_user_recognises(capsys):
    ge.ising(L=4, beta=[0.3, 0.5, 0.6], sweeps=4, thermalization=2, realizations=16, backend="cpu", progress=True,
             seed=1)
    err = capsys.readouterr().err  # the sweeps of all 48 lattices at once (a short run may draw only its start)
    assert re.search(r"L=4: .* [0-6]/6 .* sweeps/s", err), err
    ge.kuramoto(N=16, K=1.0, h=0.01, steps=4, sample_every=2, realizations=3, backend="cpu", progress=True, seed=1)
    assert re.search(r"\d/3 .* systems/s", capsys.readouterr().err)
    ge.xorsat.solve(ge.xorsat.random_instance(12, seed=1), p=[0.1, 0.2], clones=32, runs=3, backend="cpu",
                    progress=True, seed=1)
    assert re.search(r"\d/6 .* runs/s", capsys.readouterr().err)


def test_a_cluster_run_shows_the_dashboard_and_its_progress(tmp_path, capsys):
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--cluster", "--progress"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"dashboard http://[\w.]+:\d+/status", err), err
    assert re.search(r"dask tasks on the cluster: 100%.* (\d+)/\1 \[[\d:]+<00:00", err), err  # with the time left
    ds = ge.open_dataset(tmp_path / "x.nc")
    assert ds.steps.shape == (8,)
    # the device is the one the workers' tasks ran on, not a placeholder
    assert re.fullmatch(re.escape(backend.device_name("cpu")) + r" \(\d worker\(s\)\)", ds.attrs["device"])


@pytest.fixture
def drawn(monkeypatch):
    """The axes a ``--plot`` draws, captured instead of saved."""
    from gpuensembles.analysis import plots

    axes = []
    monkeypatch.setattr(plots, "save", lambda ax, path, dpi=120: axes.append(ax))
    return axes


def _labels(ax) -> list:
    texts = [ax.get_xlabel(), ax.get_ylabel(), ax.get_title()]
    texts += [ax.figure.axes[-1].get_ylabel()] if len(ax.figure.axes) > 1 else []  # a colour bar
    return texts


def test_plots_draw_the_error_bars_of_the_result_and_no_dimensionless_unit(drawn):
    from matplotlib.container import ErrorbarContainer

    from gpuensembles.models.ising import cli as ising_cli
    from gpuensembles.models.kuramoto import cli as kuramoto_cli
    from gpuensembles.models.langevin import cli as langevin_cli

    ising = ge.ising(L=[4, 8], beta=[0.3, 0.44, 0.5], sweeps=40, bins=4, realizations=4, seed=2, backend="cpu",
                     progress=False)
    ising_cli.plot(ising, "binder.png")
    binder = ising.ising.binder()
    bars = [c for c in drawn[-1].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2  # one curve per L, each with the jackknife errors of U4
    for container, L in zip(bars, (4, 8)):
        segments = container.lines[2][0].get_segments()
        half = [abs(s[1][1] - s[0][1]) / 2 for s in segments]
        np.testing.assert_allclose(half, binder["stderr"].sel(L=L).values)
    langevin = ge.langevin(a=[0.0, 2.0], f=0.3, kT=0.5, h=0.01, steps=200, realizations=6, seed=3, backend="cpu",
                           progress=False)
    langevin_cli.plot(langevin, "v.png")
    bars = [c for c in drawn[-1].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1 and len(bars[0].lines[2][0].get_segments()) == 2
    kuramoto = ge.kuramoto(N=64, K=2.0, h=0.01, steps=20, sample_every=10, seed=1, backend="cpu", progress=False)
    kuramoto_cli.plot(kuramoto, "r.png")
    for ax in drawn:
        assert not any("[1]" in text for text in _labels(ax)), _labels(ax)
    assert "[rad]" in drawn[-1].get_ylabel()  # units other than "1" are kept


def test_a_result_too_large_for_the_command_line_is_refused_before_the_estimate(tmp_path, capsys, monkeypatch,
                                                                                no_kernel):
    from gpuensembles.core import validation

    monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
    # 10**8 realizations keep 2.3 GiB; a chunk of 10**6, 24 MiB, would fit, but the command line gathers them all
    err = usage_error(ESCAPE[:-6] + ["--realizations", "1e8", "--chunks", "1e6", "--backend", "cpu", "-o",
                                     str(tmp_path / "x.nc")], capsys)
    assert re.search(r"the result of --realizations=100000000 needs about 2.33 GiB of memory, more than the 1 GiB "
                     r"available: the command line holds the whole result", err), err
    assert "estimate" not in err


SWITCHING = ["switching-currents", "--damping", "1", "--D", "0.1", "--dgamma", "2e-5", "--h", "0.02",
             "--realizations", "2", "--backend", "cpu"]


@pytest.mark.parametrize("extra, message", [
    (["--rel-error", "0.1"], "--rel-error applies only with --method rates"),  # dropped without a word before
    (["--method", "rates", "--start", "thermal"], "--start applies only with --method direct"),
    (["--method", "rates", "--passage", "next_well"], "--passage applies only with --method direct and --criterion"),
    (["--h", "2e-2"], "--h is given twice: an option takes its values once"),  # kept the last value before
    (["--realizations", "3"], "--realizations is given twice"),
    (["--gamma-start", "abc"], "argument --gamma-start: not a bias or 'auto': 'abc'"),
])
def test_options_that_do_not_apply_or_repeat_are_refused_by_name(tmp_path, capsys, no_run, extra, message):
    err = usage_error(SWITCHING + extra + ["-o", str(tmp_path / "s.nc")], capsys)
    assert message in err


def test_an_existing_output_is_kept_unless_overwrite_is_given(tmp_path, capsys):
    out = tmp_path / "x.nc"
    out.write_text("an earlier result")
    err = usage_error(ESCAPE + ["-o", str(out)], capsys)
    assert "-o/--output" in err and "exists; give --overwrite" in err and out.read_text() == "an earlier result"
    assert cli.main(ESCAPE + ["-o", str(out), "--overwrite", "--no-progress"]) == 0
    assert "escape_time" in ge.open_dataset(out)


def test_messages_name_options_not_python(tmp_path, capsys, no_run):
    err = usage_error(["escape-rates", "--gamma", "0.5", "--h", "0.01", "-o", str(tmp_path / "r.nc")], capsys)
    assert "--damping and --D are required" in err and "physical=" not in err and "dict(" not in err
    err = usage_error(["switching-currents", "--h", "0.01", "--realizations", "2", "-o", str(tmp_path / "s.nc")],
                      capsys)
    assert "--damping, --D, --dgamma are required" in err and "physical=" not in err


def test_warnings_are_one_line_without_source_paths(tmp_path, capsys):
    # a hot junction of Q = 3.5 escapes below its retrapping current: the escape criterion warns
    argv = ["switching-currents", "--damping", "0.2857", "--D", "0.0486", "--dgamma", "5e-7", "--h", "0.05",
            "--integrator", "baoab", "--realizations", "20", "--seed", "1", "--backend", "cpu", "--no-progress",
            "-o", str(tmp_path / "w.nc")]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "warning:" in line]
    assert warned and all(line.startswith("gpuensembles: warning: criterion='escape'") for line in warned)
    assert ".py" not in err and "warnings.warn" not in err


def test_ctrl_c_exits_130_in_one_line_that_says_what_was_kept(tmp_path, capsys, monkeypatch):
    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(josephson_cli, "escape_times", interrupted)
    store = tmp_path / "run"
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "x.nc"), "--store", str(store)]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted" in err and str(store) in err and "resumes" in err
    assert cli.main(ESCAPE + ["-o", str(tmp_path / "x.nc")]) == 130
    assert "nothing was kept" in capsys.readouterr().err
