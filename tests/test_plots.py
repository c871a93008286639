"""Every ``--plot`` of the command line, inspected through its matplotlib objects.

Each figure must have: words on every axis with units where the quantity has them
(physical ones for a run with SI units), error bars where the data has errors, one curve
per swept value, theory curves named in the legend, a legend that covers no data (it lies
outside the axes), and a title in words (not a module name).
"""

import re

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from gpuensembles import cli

RUN = ["--backend", "cpu", "--no-progress", "--seed", "2"]


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """``draw(argv)``: run a command with ``--plot`` and return the axes it drew (captured instead of saved)."""
    from gpuensembles.analysis import plots

    axes = []
    monkeypatch.setattr(plots, "save", lambda ax, path, dpi=120: axes.append(ax))

    def draw(argv):
        axes.clear()
        assert cli.main(argv + RUN + ["-o", str(tmp_path / "out.nc"), "--overwrite", "--plot",
                                      str(tmp_path / "out.png")]) == 0
        assert len(axes) == 1
        return axes[0].figure

    return draw


def _data_axes(fig):
    """The figure's axes that hold data (colour bars left out)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _legend_texts(ax) -> list:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def _errorbars(ax) -> list:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def _check_figure(fig):
    """What every plot must have: labelled axes without a "[1]" unit, a worded title, a legend beside the data."""
    fig.canvas.draw()
    titles = [fig._suptitle.get_text() if fig._suptitle else ""] + [ax.get_title() for ax in fig.axes]
    title = " ".join(titles)
    assert re.search(r"[A-Z][a-z]+ [a-z]+", title), titles  # words
    assert not re.search(r"\b\w+\.\w+_\w+|\(underdamped\)$", title), titles  # no module or function name
    for ax in _data_axes(fig):
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert label and "[1]" not in label, (label, titles)
        legend = ax.get_legend()
        if legend is not None:  # outside the axes: it covers no data
            assert not legend.get_window_extent().overlaps(ax.get_window_extent()), _legend_texts(ax)


def test_escape_times_plot_names_the_time_unit_and_draws_every_point(drawn):
    fig = drawn(["escape-times", "--damping", "1", "--gamma", "0.5", "--D", "0.3", "0.4", "--h", "0.01", "--model",
                 "overdamped", "--realizations", "16"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    assert re.search(r"\(escape\) time \[.+\]", ax.get_xlabel()), ax.get_xlabel()
    labels = _legend_texts(ax)
    assert any("D = 0.3" in t for t in labels) and any("D = 0.4" in t for t in labels), labels
    assert len(ax.lines) == 2
    assert fig.texts and "time" in fig.texts[0].get_text()  # the footnote says what the unit symbol stands for


def test_switching_plot_is_in_microamperes_with_one_curve_per_sweep_rate(drawn):
    fig = drawn(["switching-currents", "--preset", "li2007", "--sweep-rate", "2e7", "4e7", "--realizations", "20"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    assert ax.get_xlabel().endswith("[\u00b5A]"), ax.get_xlabel()
    labels = _legend_texts(ax)
    assert [t for t in labels if "sweep rate = 2e+07 s-1" in t or "sweep rate = 2e+07 s\u207b\u00b9" in t], labels
    assert len(ax.lines) == 2
    assert "Ic = " in fig.axes[0].get_title() or "I c = " in fig.axes[0].get_title()


def test_rates_switching_plot_explains_its_curves_and_shows_the_rates_with_errors_and_theory(drawn, monkeypatch):
    from gpuensembles.models.josephson import switching_from_rates, theory

    def formula(*, V0, damping, D, model, **_):
        rate = theory.rate_formula(model, V0, damping, D / damping)
        return lambda g: (rate(g), 0.03 * rate(g), np.full(len(g), 1000, np.int64))

    monkeypatch.setattr(switching_from_rates, "_measured_rates", formula)
    fig = drawn(["switching-currents", "--preset", "li2007", "--sweep-rate", "1", "200", "1e4", "--h", "1e-3",
                 "--integrator", "baoab", "--method", "rates", "--realizations", "100"])
    _check_figure(fig)
    left, right = _data_axes(fig)
    labels = _legend_texts(left)
    assert sum("sweep rate" in t for t in labels) == 3, labels
    assert any("Fulton-Dunkleberger" in t for t in labels), labels  # the dashed lines say what they are
    assert "[\u00b5A]" in left.get_xlabel() and "[\u00b5A]" in right.get_xlabel()
    assert _errorbars(right) and "s\u207b\u00b9" in right.get_ylabel()
    assert any(t.startswith("theory:") for t in _legend_texts(right)), _legend_texts(right)


def test_escape_rates_plot_has_error_bars_theory_and_the_bias_in_words(drawn):
    fig = drawn(["escape-rates", "--model", "overdamped", "--damping", "1", "--gamma", "0.3", "0.5", "--D", "0.06",
                 "--h", "0.05", "--rel-error", "0.3"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    (bars,) = _errorbars(ax)
    assert len(bars.lines[2][0].get_segments()) == 2  # both biases, each with its error bar
    assert "bias" in ax.get_xlabel() and ax.get_xlabel() != "gamma"
    assert re.search(r"escape rate \[.+\]", ax.get_ylabel()), ax.get_ylabel()
    assert any(t.startswith("theory:") for t in _legend_texts(ax)), _legend_texts(ax)


def test_retrapping_plot_marks_the_noise_free_retrapping_current(drawn):
    fig = drawn(["retrapping-currents", "--preset", "li2007", "--sweep-rate", "2e7", "--h", "1e-3",
                 "--realizations", "8"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    assert any("theory: noise-free retrapping current" in t for t in _legend_texts(ax)), _legend_texts(ax)
    assert ax.get_xlabel().endswith("A]"), ax.get_xlabel()


def test_kuramoto_plot_draws_every_coupling_with_its_theory(drawn):
    fig = drawn(["kuramoto", "--N", "256", "--K", "1", "4", "--width", "1", "--h", "0.01", "--steps", "40",
                 "--sample-every", "10", "--realizations", "3"])
    _check_figure(fig)
    top = _data_axes(fig)[0]
    labels = _legend_texts(top)
    assert any("K = 1" in t for t in labels) and any("K = 4" in t for t in labels), labels
    assert len(_errorbars(top)) == 2  # the mean over 3 systems with its standard error, per K
    assert sum(t.startswith("theory:") for t in labels) == 2, labels
    assert len(_data_axes(fig)) == 3  # a phase-density panel per K


def test_ising_plot_has_a_curve_per_size_with_jackknife_errors_and_beta_c(drawn):
    fig = drawn(["ising", "--L", "4", "8", "--beta", "0.3", "0.44", "0.5", "--sweeps", "40", "--bins", "4",
                 "--realizations", "4"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    assert len(_errorbars(ax)) == 2
    labels = _legend_texts(ax)
    assert any("L = 4" in t for t in labels) and any("L = 8" in t for t in labels), labels
    assert any(t.startswith("theory: critical") for t in labels), labels


def test_xorsat_plot_names_its_exponential_laws_beside_the_data(drawn):
    fig = drawn(["xorsat", "--N", "16", "24", "--instances", "2", "--runs", "4", "--clones", "64", "--p", "0.1"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    labels = _legend_texts(ax)
    assert any("N = 16" in t for t in labels) and any("N = 24" in t for t in labels), labels
    assert any(t.startswith("fit: exponential law") for t in labels), labels
    assert len(ax.lines) == 2 * 2 * 2  # a survival curve and its law per instance of each N


def test_langevin_and_mc_solve_plots(drawn):
    fig = drawn(["langevin", "--a", "0", "2", "--f", "0.3", "--kT", "0.5", "--h", "0.01", "--steps", "200",
                 "--realizations", "6"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    (bars,) = _errorbars(ax)
    assert len(bars.lines[2][0].get_segments()) == 2
    fig = drawn(["mc-solve", "--problem", "laplacian-2d", "--size", "6", "--histories", "2000"])
    _check_figure(fig)
    (ax,) = _data_axes(fig)
    assert any("stderr" in t for t in _legend_texts(ax))
