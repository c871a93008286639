"""Switching histograms from escape rates (``switching_currents(method="rates")``, :mod:`.fulton_dunkleberger`).

Every test here uses an analytic rate (Kramers' overdamped rate, or Mel'nikov-Meshkov) as
the "measured" one, with zero or a chosen relative error: the simulations behind the real
rates are tested in ``test_switching_rates_glue.py``.
"""

import functools
import math
import warnings

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.models.josephson import fulton_dunkleberger as sr
from gpuensembles.models.josephson import switching_from_rates as run
from gpuensembles.models.josephson import theory

# overdamped washboard, theta = 0.05: the switching of ramps from 1e-12 to 1e-4 per time unit lies
# between gamma = 0.4 and 0.95, where Delta U / theta runs from 20 down to 0.5
V0, DAMPING, THETA = 1.0, 1.0, 0.05
KRAMERS = functools.partial(theory.escape_rate, V0=V0, damping=DAMPING, theta=THETA, form="kramers",
                            model="overdamped")
kramers = np.vectorize(KRAMERS)
SIX_DECADES = np.logspace(-10, -4, 7)


def analytic(relative_error=0.0, calls=None, rate=kramers, scale=1.0, noise=None):
    """A rate callable: ``scale * rate(gamma)`` with the given relative standard error; counts its calls.

    With ``noise`` (a seed), each rate is off by that error, drawn (a measurement), not only stated.
    """
    generator = None if noise is None else np.random.default_rng(noise)

    def rates(gamma):
        if calls is not None:
            calls.append(np.array(gamma))
        r = scale * rate(gamma)
        if generator is not None:
            r = r * (1 + relative_error * generator.standard_normal(len(r)))
        return r, relative_error * r, np.full(len(gamma), 1000, np.int64)
    return rates


def overdamped_curve(relative_error=0.0, gamma_dot=SIX_DECADES, calls=None, theory_scale=1.0):
    expected = sr.theory_curve(lambda g: theory_scale * kramers(g), gamma_start=0.0, gamma_end=1.0, V0=V0,
                               theta=THETA)
    return sr.adaptive_curve(analytic(relative_error, calls), gamma_dot=gamma_dot, gamma_start=0.0, gamma_end=1.0,
                             V0=V0, theta=THETA, theory=expected)


# --------------------------------------------------------------------------- Fulton-Dunkleberger integral


def test_fd_integral_is_exact_for_a_dense_rate_grid():
    """Dense rate points: the exact integral of the log-linear interpolant equals theory's quadrature.

    Linear interpolation of ln Gamma errs by at most (spacing^2 / 8) max |(ln Gamma)''| with
    (ln Gamma)'' = 2 V0 / (theta sqrt(1 - gamma^2)) (+ the prefactor's share); a CDF error is at most
    that times max (1 - P) E = 1/e. Theory's own quadrature uses 10x more points.
    """
    grid = np.linspace(0.3, 0.95, 400)
    curve = sr.make_curve(grid, kramers(grid))
    gamma_dot = np.array([1e-9, 1e-7, 1e-5])
    x = np.linspace(0.35, 0.94, 300)
    cdf, stderr = sr.fd_cdf(x, curve, gamma_dot, gamma_start=0.3)
    assert cdf.shape == (3, 300) and np.all(stderr == 0)
    curvature = 2 * V0 / (THETA * math.sqrt(1 - 0.95**2)) + 2 / (1 - 0.95**2)
    bound = 2 * (np.diff(grid).max() ** 2 / 8 * curvature) / math.e
    for row, rate in zip(cdf, gamma_dot):
        reference = theory.fulton_dunkleberger_cdf(x, gamma_dot=rate, rate=KRAMERS, gamma_start=0.3, points=4000)
        assert np.abs(row - reference).max() < bound, (rate, np.abs(row - reference).max(), bound)
        assert 0.9 < row.max() and row.min() < 0.1  # the window is inside x: the comparison means something


@pytest.mark.parametrize("start, end", [(0.05, 1.0), (0.3, 0.7)])
def test_fd_integral_of_an_exponential_rate_is_exact(start, end):
    """Gamma = a exp(k gamma) is its own log-linear interpolant: the CDF is exact to rounding, with the ramp
    starting below the rate grid (extrapolated) or inside it, and ending above it or inside it."""
    a, k, gamma_dot = 1e-9, 40.0, 1e-6
    grid = np.linspace(0.1, 0.9, 5)
    curve = sr.make_curve(grid, a * np.exp(k * grid))
    x = np.linspace(0.0, 1.0, 101)
    exact = -np.expm1(-a / k * (np.exp(k * np.clip(x, start, end)) - np.exp(k * start)) / gamma_dot)
    cdf, _ = sr.fd_cdf(x, curve, gamma_dot, gamma_start=start, gamma_end=end)
    np.testing.assert_allclose(cdf, exact, rtol=1e-12, atol=1e-15)
    # and its inverse (to the rounding of the bias: 1e-16 of 0.3 is 1e-5 of the step that raises P to 1e-9)
    u = np.array([1e-6, 0.01, 0.5, 0.99]) * cdf[-1]
    back = sr.quantile(u, curve, gamma_dot, gamma_start=start, gamma_end=end)
    np.testing.assert_allclose(sr.fd_cdf(back, curve, gamma_dot, gamma_start=start, gamma_end=end)[0], u, rtol=1e-7)
    assert np.isnan(sr.quantile(0.5, curve, 1e3, gamma_start=start, gamma_end=0.6))  # too fast to switch by 0.6


def _worst_cdf_error(curve, gamma_dot) -> float:
    """The largest |CDF - theory's quadrature| over the switching windows of ``gamma_dot``."""
    worst = 0.0
    for rate in gamma_dot:
        lo, hi = sr.quantile([1e-6, 1 - 1e-6], curve, rate)
        x = np.linspace(lo, hi, 200)
        reference = theory.fulton_dunkleberger_cdf(x, gamma_dot=rate, rate=KRAMERS, gamma_start=lo - 0.05,
                                                   points=3000)
        worst = max(worst, np.abs(sr.fd_cdf(x, curve, rate)[0] - reference).max())
    return worst


def test_adaptive_grid_agrees_with_theory_for_six_decades_of_sweep_rates():
    """With exact rates the grid's points hold ln Gamma's interpolation error below 1e-3, so the CDF
    is within (1/e) 1e-3 of theory wherever the cubic-vs-linear estimate holds; we allow 1e-3."""
    calls = []
    curve = overdamped_curve(calls=calls, gamma_dot=SIX_DECADES)
    assert len(calls) <= sr.MAX_PASSES and curve.gamma.size <= sr.MAX_POINTS
    assert sum(len(c) for c in calls) == curve.gamma.size  # each point measured once
    worst = _worst_cdf_error(curve, SIX_DECADES)
    for rate in SIX_DECADES:
        # the grid covers the window: probability < 1e-7 below its first point, > 1 - 1e-7 at its last
        ends, _ = sr.fd_cdf(curve.gamma[[0, -1]], curve, rate)
        assert ends[0] < 1e-7 and ends[1] > 1 - 1e-7, (rate, ends)
    print(f"6 decades: {curve.gamma.size} rate points in {len(calls)} calls, max |cdf - theory| = {worst:.2e}")
    assert worst < 1e-3


@pytest.mark.parametrize("theory_scale", [1e-3, 1e3])
def test_grid_extends_when_theory_is_off_by_a_thousand(theory_scale):
    """Theory 1000x too low or too high puts the first grid beyond the 3-theta margin: the passes extend it."""
    calls = []
    curve = overdamped_curve(calls=calls, theory_scale=theory_scale, gamma_dot=SIX_DECADES[::3])
    assert 2 <= len(calls) <= sr.MAX_PASSES and curve.gamma.size <= sr.MAX_POINTS
    for rate in SIX_DECADES[::3]:
        ends, _ = sr.fd_cdf(curve.gamma[[0, -1]], curve, rate)
        assert ends[0] < 1e-6 and ends[1] > 1 - 1e-6, (theory_scale, rate, ends)


@pytest.mark.parametrize("theory_scale", [1.0, 3.0, 1e-3, 1e3])
@pytest.mark.parametrize("noise", [None, 4])
def test_the_grid_theory_expects_is_measured_first(theory_scale, noise):
    """``first`` (the biases the passes would ask for at theory's rates) goes into pass 1: where theory
    holds (to a factor of 3) that is the only pass, and with theory's rates exact the points are those the
    passes would have measured; where it is 1000 times off, the passes still extend the grid and refine
    it as finely as without ``first``. Rates measured to 1 % (drawn) add no points where the curve bends
    less than twice their error: splitting there would chase the noise."""
    gamma_dot = SIX_DECADES[::3] if noise is None else np.array([1e-8])  # (three rates fill MAX_POINTS at once)
    expected = sr.theory_curve(lambda g: theory_scale * kramers(g), gamma_start=0.0, gamma_end=1.0, V0=V0,
                               theta=THETA)
    curve_of = functools.partial(sr.adaptive_curve, gamma_dot=gamma_dot, gamma_start=0.0, gamma_end=1.0, V0=V0,
                                 theta=THETA, theory=expected)
    first = run._expected_biases(curve_of, expected, 1e-3)
    plain, ahead = [], []
    error = 0.0 if noise is None else 0.01
    without = curve_of(analytic(error, plain, noise=noise))
    with_first = curve_of(analytic(error, ahead, noise=noise), first=first)
    assert set(first) <= set(ahead[0]) and sum(len(c) for c in ahead) == with_first.gamma.size
    if theory_scale == 1.0 and noise is None:  # theory is the rate: the same grid
        np.testing.assert_array_equal(with_first.gamma, without.gamma)
    if 0.1 < theory_scale < 10:
        assert len(plain) == 2 and len(ahead) == 1
    else:
        assert len(ahead) == len(plain) == 3
        if noise is None:  # (drawn rates differ between the runs: the draws follow the points asked)
            np.testing.assert_array_equal(ahead[1], plain[1])  # the same extension
        assert with_first.gamma.size <= 2 * sr.MAX_POINTS
    allowed = max(1e-3, 1.5 * _worst_cdf_error(without, gamma_dot))
    if noise is not None:  # and the noise's own share
        allowed += 4 * max(np.max(sr.fd_cdf(with_first.gamma, with_first, rate)[1]) for rate in gamma_dot)
    assert _worst_cdf_error(with_first, gamma_dot) < allowed


# --------------------------------------------------------------------------- errors


def test_cdf_stderr_matches_the_spread_of_perturbed_rate_curves():
    """Rates perturbed by their stated SE (1%, independent): the CDFs' standard deviation over 1000
    curves equals cdf_stderr to the sampling error of a standard deviation, 1/sqrt(2 (N-1)) = 2.2%
    (5 sigma, as the maximum over the window is taken), plus 2% for the delta method's second order."""
    curve = overdamped_curve(relative_error=0.01, gamma_dot=[1e-8])
    x = np.linspace(*sr.quantile([0.01, 0.99], curve, 1e-8), 60)
    cdf, stderr = sr.fd_cdf(x, curve, 1e-8)
    generator = np.random.default_rng(18)
    n = 1000
    draws = np.array([sr.fd_cdf(x, sr.make_curve(curve.gamma, curve.rate * (1 + 0.01 * generator.standard_normal(
        curve.gamma.size))), 1e-8)[0] for _ in range(n)])
    ratio = draws.std(axis=0, ddof=1) / stderr
    print(f"spread / cdf_stderr over the window: {ratio.min():.3f} .. {ratio.max():.3f}; "
          f"cdf_stderr up to {stderr.max():.2e}")
    assert np.abs(ratio - 1).max() < 5 / math.sqrt(2 * (n - 1)) + 0.02
    assert np.abs(draws.mean(axis=0) - cdf).max() < 5 * stderr.max() / math.sqrt(n) + 1e-4


def test_moments_are_those_of_the_samples_and_their_errors_those_of_perturbed_curves():
    """The distribution's mean and width from its quantiles equal a large sample's (to 4 SE); their
    bootstrap errors are the spread of the moments of curves perturbed by the stated errors (5%,
    independent), which a direct computation of 400 such curves gives to 10% (the sampling error of
    a standard deviation over 200 draws, 5%, twice)."""
    curve = overdamped_curve(relative_error=0.05, gamma_dot=[1e-6])
    m = sr.moments(curve, 1e-6, draws=200, seed=3)
    x = sr.draw(curve, 1e-6, seed=9, stream=0, first=0, count=200_000)
    assert abs(m["mean"] - x.mean()) < 4 * x.std() / math.sqrt(x.size)
    assert abs(m["std"] / x.std() - 1) < 4 / math.sqrt(2 * x.size)
    assert m["switched"] == pytest.approx(1.0)
    generator = np.random.default_rng(4)
    perturbed = [sr.moments(sr.make_curve(curve.gamma, curve.rate * np.exp(0.05 * generator.standard_normal(
        curve.gamma.size))), 1e-6, draws=0) for _ in range(400)]
    for name in ("mean", "std"):
        spread = np.std([p[name] for p in perturbed], ddof=1)
        assert abs(m[f"{name}_stderr"] / spread - 1) < 0.2, name


# --------------------------------------------------------------------------- samples


def test_samples_follow_the_cdf_dkw_bound():
    """Dvoretzky-Kiefer-Wolfowitz: sup |F_n - F| > sqrt(ln(2 / alpha) / (2 n)) with probability < alpha = 1e-4."""
    curve = overdamped_curve(gamma_dot=[1e-6])
    n = 20_000
    x = np.sort(sr.draw(curve, 1e-6, seed=5, stream=0, first=0, count=n))
    assert np.all(np.isfinite(x))
    F, _ = sr.fd_cdf(x, curve, 1e-6)
    i = np.arange(1, n + 1)
    distance = max(np.max(i / n - F), np.max(F - (i - 1) / n))
    bound = math.sqrt(math.log(2 / 1e-4) / (2 * n))
    print(f"KS distance {distance:.4f}, DKW bound {bound:.4f}")
    assert distance < bound


def test_samples_do_not_depend_on_the_split_and_follow_the_seed():
    curve = overdamped_curve(gamma_dot=[1e-6])
    kw = dict(seed=11, stream=3)
    whole = sr.draw(curve, 1e-6, first=0, count=1000, **kw)
    parts = np.concatenate([sr.draw(curve, 1e-6, first=a, count=b - a, **kw) for a, b in ((0, 1), (1, 300),
                                                                                           (300, 1000))])
    np.testing.assert_array_equal(whole, parts)
    np.testing.assert_array_equal(whole, sr.draw(curve, 1e-6, first=0, count=1000, **kw))
    assert not np.any(whole == sr.draw(curve, 1e-6, first=0, count=1000, seed=12, stream=3))
    assert not np.any(whole == sr.draw(curve, 1e-6, first=0, count=1000, seed=11, stream=4))


def test_samples_beyond_gamma_end_do_not_switch():
    curve = overdamped_curve(gamma_dot=[1e-6])
    median = float(sr.quantile(0.5, curve, 1e-6))
    n = 4000
    x = sr.draw(curve, 1e-6, seed=2, stream=0, first=0, count=n, gamma_end=median)
    p = float(sr.fd_cdf([median], curve, 1e-6, gamma_end=median)[0][0])
    assert p == pytest.approx(0.5, abs=1e-9)
    assert abs(np.isfinite(x).mean() - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert np.nanmax(x) <= median


# --------------------------------------------------------------------------- the run function


@pytest.fixture
def formula_rates(monkeypatch):
    """``method="rates"`` with the model's rate formula (3% error) in place of the simulations; counts calls."""
    calls = []

    def fake(*, V0, damping, D, h, model, integrator, rel_error, criterion, running_wells, seed, dtype, backend,
             progress, store):
        return analytic(0.03, calls, rate=theory.rate_formula(model, V0, damping, D / damping))

    monkeypatch.setattr(run, "_measured_rates", fake)
    return calls


@pytest.fixture
def no_simulation(monkeypatch):
    monkeypatch.setattr(run, "_measured_rates", lambda **kw: pytest.fail("a rate simulation started"))


OVERDAMPED = dict(V0=V0, damping=DAMPING, D=DAMPING * THETA, h=0.02, model="overdamped", method="rates")


def test_run_returns_samples_cdf_and_rate_curve(formula_rates):
    dgamma = np.array([2e-12, 2e-10, 2e-8])  # gamma_dot = 1e-10, 1e-8, 1e-6
    ds = ge.switching_currents(dgamma=dgamma, realizations=3000, seed=4, **OVERDAMPED)
    assert ds.switching_current.dims == ("dgamma", "realization") and ds.cdf.dims == ("dgamma", "bias")
    assert ds.rate.dims == ("rate_gamma",) and ds.rate.size <= sr.MAX_POINTS and len(formula_rates) <= sr.MAX_PASSES
    assert ds.attrs["method"] == "rates" and ds.attrs["passage"] == "next_well" and ds.switched.all()
    for name in ("switching_current", "steps", "cdf", "cdf_stderr", "rate", "rate_stderr", "bias", "rate_gamma"):
        assert "units" in ds[name].attrs and "long_name" in ds[name].attrs, name
    steps = np.ceil((ds.switching_current - ds.attrs["gamma_start"]) / ds.dgamma)
    np.testing.assert_array_equal(ds.steps, steps.astype(np.int64))
    # the .fpt accessor reads the result like a direct one; its Kramers CDF is the formula used as "rates"
    means = ds.fpt.mean()
    assert np.all(np.diff(means["mean"].values) > 0)  # faster ramps switch later
    one = ds.isel(dgamma=1)
    comparison = one.fpt.compare("kramers")
    bound = math.sqrt(math.log(2 / 1e-4) / (2 * 3000)) + 3 * float(one.cdf_stderr.max())
    assert float(comparison.ks_statistic) < bound
    np.testing.assert_allclose(one.cdf, one.fpt.theory_cdf("kramers")(one.bias.values), atol=3e-3)


def test_theory_cdf_evaluates_its_rates_once_per_range(formula_rates, monkeypatch):
    ds = ge.switching_currents(dgamma=2e-10, realizations=200, seed=4, **OVERDAMPED)
    calls = []

    def counted(g, **kw):
        calls.append(g)
        return escape_rate(g, **kw)

    escape_rate = theory.escape_rate
    monkeypatch.setattr(theory, "escape_rate", counted)
    cdf = ds.fpt.theory_cdf("kramers")
    bias = np.linspace(float(ds.attrs["gamma_start"]), float(ds.switching_current.max()), 50)
    first = cdf(bias)
    assert 0 < len(calls) <= 400
    np.testing.assert_array_equal(cdf(bias[::-1])[::-1], first)  # the same numbers, from the rates kept
    assert len(calls) == len(set(calls))  # and no rate was evaluated twice
    # the uncached formula gives the same numbers
    direct = theory.fulton_dunkleberger_cdf(bias, gamma_dot=2e-10 / OVERDAMPED["h"], rate=functools.partial(
        escape_rate, V0=V0, damping=DAMPING, theta=THETA, form="kramers", model="overdamped"),
        gamma_start=float(ds.attrs["gamma_start"]))
    np.testing.assert_allclose(first, direct, rtol=1e-12, atol=1e-15)


def test_run_is_the_same_for_any_chunking(formula_rates):
    kw = dict(dgamma=[2e-10, 2e-8], realizations=500, seed=9, **OVERDAMPED)
    eager = ge.switching_currents(**kw)
    lazy = ge.switching_currents(**kw, chunks={"realization": 170, "dgamma": 1})
    assert not isinstance(lazy.switching_current.data, np.ndarray)
    xr.testing.assert_identical(eager.drop_attrs(), lazy.compute().drop_attrs())
    other = ge.switching_currents(**{**kw, "seed": 10})
    assert not np.any(eager.switching_current.values == other.switching_current.values)


def test_physical_form_sweep_rate_dimension_and_amperes(formula_rates):
    physical = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=[1.0, 200.0, 1e4])
    ds = ge.switching_currents(physical=physical, h=1e-3, integrator="baoab", realizations=200, seed=1,
                               method="rates")
    assert ds.switching_current_A.dims == ("sweep_rate", "realization") and "dgamma" in ds.coords
    np.testing.assert_allclose(ds.switching_current_A, ds.switching_current * 0.748e-6)
    assert np.all(np.diff(ds.switching_current.mean("realization")) > 0)
    assert ds.attrs["physical_T"] == 1.2 and ds.attrs["integrator"].startswith("BAOAB")
    assert float(ds.adiabaticity.max()) < sr.WARN_EPSILON


def test_netcdf_round_trip(formula_rates, tmp_path):
    ds = ge.switching_currents(dgamma=2e-8, realizations=50, seed=1, **OVERDAMPED)
    ds.to_netcdf(tmp_path / "r.nc")
    xr.testing.assert_identical(ge.open_dataset(tmp_path / "r.nc").load(), ds)


# --------------------------------------------------------------------------- adiabaticity


def test_adiabaticity_thresholds():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sr.check_adiabatic([0.001, 0.009], [1.0, 2.0], "sweep_rate", "theory")
    with pytest.warns(RuntimeWarning, match=r"sweep_rate = 2 .* 0\.05 .*above 0\.01"):
        sr.check_adiabatic([0.001, 0.05], [1.0, 2.0], "sweep_rate", "theory")
    with pytest.raises(ValueError, match=r"dgamma = 3 .* 0\.5 .*above the limit 0\.1"):
        sr.check_adiabatic([0.5], [3.0], "dgamma", "theory")


def test_adiabaticity_is_the_rate_over_relaxation_where_switching_happens():
    curve = overdamped_curve(gamma_dot=[1e-6])
    relaxation = functools.partial(sr.relaxation_rate, V0=V0, damping=DAMPING, model="overdamped")
    epsilon = float(sr.adiabaticity(curve, [1e-6], relaxation)[0])
    top = float(sr.quantile(1 - 1e-3, curve, 1e-6))  # the rate rises with the bias: the maximum is at the top
    assert epsilon == pytest.approx(KRAMERS(top) / float(relaxation(top)), rel=1e-3)


def test_too_fast_a_sweep_fails_before_any_simulation(no_simulation):
    # overdamped: Gamma / relaxation reaches ~0.015 at gamma_dot = 1e-4, ~0.1 near 1e-3
    with pytest.raises(ValueError, match=r"dgamma = 0\.0002 is too fast.*decrease dgamma"):
        ge.switching_currents(dgamma=2e-4, realizations=10, **OVERDAMPED)
    with pytest.raises(ValueError, match=r"sweep_rate = 1e\+11 is too fast"):
        ge.switching_currents(physical=dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=1e11), h=1e-3,
                              integrator="baoab", realizations=10, method="rates")


def test_a_sweep_near_the_limit_warns_twice(formula_rates):
    with pytest.warns(RuntimeWarning, match="dgamma = 2e-06 is too fast") as record:
        ge.switching_currents(dgamma=2e-6, realizations=10, seed=1, **OVERDAMPED)
    assert {"(Kramers rate)" in str(w.message) for w in record} == {True, False}  # theory, then measured


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("change, name", [
    (dict(method="fast"), "method"),
    (dict(V0=[1.0, 2.0]), "V0"),
    (dict(D=[0.05, 0.1]), "D"),
    (dict(h=[0.01, 0.02]), "h"),
    (dict(dgamma=-1e-8), "dgamma"),
    (dict(dgamma=[1e-8, np.nan]), "dgamma"),
    (dict(gamma_start=1.5), "gamma_start"),
    (dict(gamma_start="cold"), "gamma_start"),
    (dict(gamma_end=0.0), "gamma_end"),
    (dict(realizations=0), "realizations"),
    (dict(seed=-1), "seed"),
    (dict(h=0.5), "h"),
    (dict(integrator="baoab"), "integrator"),
    (dict(rel_error=0.0), "rel_error"),
    (dict(rel_error="small"), "rel_error"),
])
def test_bad_input_names_the_parameter_before_any_simulation(change, name, no_simulation):
    kwargs = {**OVERDAMPED, "dgamma": 2e-8, "realizations": 10, **change}
    with pytest.raises((ValueError, TypeError), match=rf"(?<!\w){name}(?!\w)"):
        ge.switching_currents(**kwargs)


def test_physical_junction_arrays_are_refused(no_simulation):
    physical = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=[1.2, 2.4], sweep_rate=200.0)
    with pytest.raises(ValueError, match=r"T must be a single number with method='rates'"):
        ge.switching_currents(physical=physical, h=1e-3, integrator="baoab", realizations=10, method="rates")


def test_rate_curves_refuse_bad_rates():
    with pytest.raises(ValueError, match="finite and > 0"):
        sr.make_curve([0.1, 0.2], [1e-3, 0.0])
    with pytest.raises(ValueError, match="distinct"):
        sr.make_curve([0.1, 0.1], [1e-3, 1e-2])


def test_the_glue_calls_escape_rates_as_its_contract_says(monkeypatch):
    """A stand-in ``rates`` module checks the keyword arguments and returns the contract's variables;
    every batch gets its own seed."""

    seen = []

    def escape_rates(*, gamma, h, damping=None, D=None, V0=1.0, physical=None, model="underdamped",
                     integrator="euler", method="auto", rel_error=0.03, criterion="escape", running_wells=None,
                     seed=None, dtype="float32", chunks=None, store=None, backend="auto", progress="auto"):
        seen.append(dict(gamma=np.array(gamma), h=h, seed=seed, model=model, integrator=integrator,
                         rel_error=rel_error, criterion=criterion, running_wells=running_wells, store=store))
        rate = 1e3 * kramers(gamma)  # theory 1000 times off: the grid takes more than one pass
        coords = {"gamma": gamma}
        return xr.Dataset({"rate": ("gamma", rate), "rate_stderr": ("gamma", 0.03 * rate),
                           "steps": ("gamma", np.full(len(gamma), 7, np.int64)),
                           "barrier": ("gamma", sr.reduced_barrier(gamma, V0=V0, theta=D / damping)),
                           "method": ("gamma", np.full(len(gamma), "direct"))}, coords=coords,
                          attrs={"backend": "cpu", "device": "test CPU"})

    monkeypatch.setattr(run, "escape_rates", escape_rates)
    ds = ge.switching_currents(dgamma=2e-8, realizations=20, seed=3, rel_error=0.05, **OVERDAMPED)
    assert all(s["rel_error"] == 0.05 for s in seen) and len(seen) >= 2
    assert len({s["seed"] for s in seen}) == len(seen)
    assert all(s["h"] == 0.02 and s["model"] == "overdamped" for s in seen)
    assert all(s["criterion"] == "escape" and s["running_wells"] is None and s["store"] is None for s in seen)
    assert ds.attrs["device"] == "test CPU" and int(ds.rate_steps.sum()) == 7 * ds.rate.size
