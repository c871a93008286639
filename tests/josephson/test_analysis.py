"""The ``.fpt`` analysis on synthetic data with known answers (no simulation needed)."""

import math

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from gpuensembles.analysis import first_passage as fpt

from .. import raise_if_dask_computes, z_score


def synthetic(tau=(2.0, 5.0), n=20_000, censor=None, seed=0, chunks=None):
    """Exponential passage times with means ``tau`` along D, as an escape_times-like Dataset."""
    rng = np.random.default_rng(seed)
    t = rng.exponential(np.asarray(tau)[:, None], size=(len(tau), n))
    h = 1e-3
    steps = np.ceil(t / h).astype(np.int64)
    escaped = np.ones_like(steps, dtype=bool)
    if censor is not None:
        max_steps = int(censor / h)
        escaped = steps <= max_steps
        steps = np.minimum(steps, max_steps)
    times = np.where(escaped, steps * h, np.nan)
    ds = xr.Dataset(
        {"escape_time": (("D", "realization"), times, {"units": "1"}), "escaped": (("D", "realization"), escaped),
         "steps": (("D", "realization"), steps)},
        coords={"D": [0.1, 0.2], "realization": np.arange(n)},
        attrs={"h": h},
    )
    return ds.chunk({"realization": chunks}) if chunks else ds


def test_mean_and_stderr_of_exponential_samples():
    stats = synthetic().fpt.mean()
    for tau, m, se, n in zip((2.0, 5.0), stats["mean"].values, stats["stderr"].values, stats["n"].values):
        assert se == pytest.approx(tau / math.sqrt(n), rel=0.05)  # sd of an exponential is its mean
        assert abs(z_score(m, se, tau + 0.5e-3)) < 4  # ceil to whole steps adds h/2 on average


def test_mean_with_censoring():
    ds = synthetic(censor=6.0)
    stats = ds.fpt.mean()
    assert np.isnan(stats["mean"]).all() and (stats["n_censored"] > 0).all()
    dropped = ds.fpt.mean(censored="drop")
    # conditional mean of an exponential truncated at c: tau - c / (exp(c / tau) - 1)
    for tau, m, se in zip((2.0, 5.0), dropped["mean"].values, dropped["stderr"].values):
        assert abs(z_score(m, se, tau - 6.0 / math.expm1(6.0 / tau) + 0.5e-3)) < 4
    with pytest.raises(ValueError, match="censored"):
        ds.fpt.mean(censored="ignore")


def test_survival_matches_exponential_law_and_stops_at_censoring():
    n = 20_000
    t = np.linspace(0.0, 8.0, 17)
    s = synthetic(n=n, censor=6.0).fpt.survival(t=t)
    assert s.dims == ("D", "time")
    for tau, row in zip((2.0, 5.0), s.values):
        known = t < 6.0
        expected = np.exp(-(np.floor(t / 1e-3 + 1e-9) * 1e-3) / tau)  # P(ceil(T/h) h > t)
        sigma = np.sqrt(expected * (1 - expected) / n)
        assert np.all(np.abs(row[known] - expected[known]) <= 4 * sigma[known] + 1e-12)
        assert np.isnan(row[~known]).all()


def test_cdf_is_one_minus_survival():
    ds = synthetic(n=500)
    t = np.linspace(0, 10, 11)
    xr.testing.assert_allclose(ds.fpt.cdf(t=t), 1 - ds.fpt.survival(t=t))
    assert ds.fpt.survival().sizes["time"] == 201  # default grid on eager data


def test_analysis_stays_lazy_on_dask_data():
    ds = synthetic(n=1000, chunks=100)
    with raise_if_dask_computes():
        stats = ds.fpt.mean()
        s = ds.fpt.survival(t=np.linspace(0, 5, 6))
    assert isinstance(stats["mean"].data, da.Array) and isinstance(s.data, da.Array)
    xr.testing.assert_allclose(stats.compute(), synthetic(n=1000).fpt.mean())
    with pytest.raises(ValueError, match="pass t="):
        ds.fpt.survival()


@pytest.mark.parametrize("form, prefactor", [("arrhenius", 0.0), ("kramers", -1.0), ("power", 0.7)])
def test_kramers_fit_recovers_the_slope(form, prefactor):
    rng = np.random.default_rng(1)
    D = np.linspace(0.004, 0.012, 6)
    slope = 0.0342
    mean = np.exp(2.0 + slope / D + prefactor * np.log(D))
    rel = 0.01
    noisy = mean * (1 + rel * rng.standard_normal(D.size))
    m = xr.DataArray(noisy, dims="D", coords={"D": D})
    fit = fpt.kramers_fit(m, m * rel, dim="D", form=form)
    assert abs(z_score(float(fit.slope), float(fit.slope_stderr), slope)) < 4
    assert fit.fit.dims == ("D",)


def test_kramers_fit_input_checks():
    m = xr.DataArray([1.0, 2.0], dims="D", coords={"D": [0.1, 0.2]})
    with pytest.raises(ValueError, match="form"):
        fpt.kramers_fit(m, m * 0.1, form="eyring")
    with pytest.raises(ValueError, match="more than 3 points"):
        fpt.kramers_fit(m, m * 0.1, form="power")
    with pytest.raises(ValueError, match="along dim='D' only"):
        fpt.kramers_fit(m.expand_dims(gamma=[0.5]), m * 0.1)


def _fd_sample(n, a, b, gamma_dot, seed):
    """Switching biases for the rate a exp(b gamma) under a ramp from 0: inverse transform of
    P(g) = 1 - exp(-(a / (b gamma_dot)) (exp(b g) - 1))."""
    u = np.random.default_rng(seed).random(n)
    return np.log1p(-np.log1p(-u) * b * gamma_dot / a) / b


def test_ks_compare_accepts_the_true_cdf_and_rejects_a_wrong_one():
    a, b, gamma_dot = 1e-6, 25.0, 1e-4
    sample = xr.DataArray(_fd_sample(5000, a, b, gamma_dot, seed=4), dims="realization")

    def cdf(g, a=a):
        return -np.expm1(-(a / (b * gamma_dot)) * np.expm1(b * np.asarray(g)))

    good = fpt.ks_compare(sample, cdf)
    bad = fpt.ks_compare(sample, lambda g: cdf(g, a=1.3 * a))
    assert float(good.ks_pvalue) > 0.01 and float(bad.ks_pvalue) < 0.01
    assert float(np.abs(good.difference).max()) == pytest.approx(float(good.ks_statistic), abs=2e-3)


def test_quasipotential_is_exact_for_eq13_data():
    damping, barrier = 0.05, 0.685
    D = np.linspace(0.004, 0.012, 5)
    theta = D / damping
    m = xr.DataArray(3.0 / theta * np.exp(barrier / theta), dims="D", coords={"D": D})
    q = fpt.quasipotential(m, 0.01 * m, damping)
    np.testing.assert_allclose(q.barrier.values, barrier, rtol=1e-12)
    assert q.barrier_stderr.dims == ("inverse_theta",)


def test_spread_and_percentile_errors_are_the_spread_of_their_estimates():
    # 400 samples of 2000 exponential times (skewed, as escape times are): the stated standard errors
    # of the width and of three percentiles match the spread of the 400 estimates (to 15%: the
    # sample standard deviation of 400 values is good to 3.5%, the error estimates scatter too)
    generator = np.random.default_rng(40)
    times = xr.DataArray(generator.exponential(2.0, (400, 2000)), dims=("trial", "realization"),
                         attrs={"units": "1", "long_name": "escape time"})
    passed = xr.ones_like(times, dtype=bool)
    width = fpt.spread(times, passed)
    assert abs(float(width["std"].mean()) / 2.0 - 1) < 4 * float(width["std"].std()) / 2.0 / math.sqrt(400)
    assert abs(float(width["stderr"].mean()) / float(width["std"].std()) - 1) < 0.15
    q = fpt.percentile(times, passed, [10, 50, 90])
    truth = -2.0 * np.log(1 - np.array([0.1, 0.5, 0.9]))
    spread_q = q["percentile"].std("trial").values
    np.testing.assert_allclose(q["stderr"].mean("trial").values / spread_q, 1, atol=0.15)
    assert np.all(np.abs(q["percentile"].mean("trial").values - truth) < 4 * spread_q / math.sqrt(400))
    # a point with a realization that did not pass gives NaN by default, the conditional value with "drop"
    passed[0, 0] = False
    assert np.isnan(float(fpt.spread(times, passed)["std"][0]))
    assert np.isfinite(float(fpt.spread(times, passed, censored="drop")["std"][0]))
    with pytest.raises(ValueError, match="q must be percentiles"):
        fpt.percentile(times, passed, [0, 50])
