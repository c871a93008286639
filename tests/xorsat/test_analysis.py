"""The ``.tts`` analysis on synthetic exponential run times with known ``tau`` (no solver needed)."""

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, special, stats

from gpuensembles.models.xorsat import analysis as tts

SWEEP = 1e-3  # seconds per sweep of the synthetic solver


def make(t, timeout=None, dims=("instance",), coords=None):
    """A solver-like Dataset from run times ``t`` (s, last axis ``run``), censored at ``timeout`` (s)."""
    t = np.asarray(t, dtype=float)
    sweeps = np.ceil(t / SWEEP).astype(np.int64)
    solved = np.ones(t.shape, dtype=bool)
    attrs = {}
    if timeout is not None:
        limit = int(round(timeout / SWEEP))
        solved = t <= timeout
        t = np.where(solved, t, timeout)
        sweeps = np.minimum(sweeps, limit)
        attrs["timeout_sweeps"] = limit
    dims = tuple(dims) + ("run",)
    coords = {d: np.arange(n) for d, n in zip(dims[:-1], t.shape[:-1])} if coords is None else coords
    return xr.Dataset(
        {
            "tts_seconds": (dims, t, {"units": "s"}),
            "tts_sweeps": (dims, sweeps),
            "solved": (dims, solved),
            "clone": (dims, np.where(solved, 0, -1)),
        },
        coords=coords,
        attrs=attrs,
    )


def synthetic(tau, runs, timeout=None, seed=0, dims=("instance",), coords=None):
    """Exponential TTS of mean ``tau`` (s; its shape over ``dims``), ``runs`` runs per point."""
    tau = np.asarray(tau, dtype=float)
    t = np.random.default_rng(seed).exponential(tau[..., None], size=tau.shape + (runs,))
    return make(t, timeout, dims, coords)


def counted(k, runs, timeout=1.0):
    """One point with ``k`` of ``runs`` runs solved (at timeout / 2), the others censored at ``timeout``."""
    t = np.where(np.arange(runs) < k, timeout / 2, 2 * timeout)
    return make(t[None, :], timeout).isel(instance=0)


def binomial_se(p, n):
    return math.sqrt(p * (1 - p) / n)


# --------------------------------------------------------------------------- mean


@pytest.mark.parametrize("timeout", [None, 4.0])
def test_mean_recovers_tau(timeout):
    tau = np.array([2.0, 5.0])
    ds = synthetic(tau, 20_000, timeout=timeout)
    m = tts.mean(ds)
    k = ds.solved.sum("run").values
    assert np.all(np.abs(m.tau.values - tau) < 4 * m.stderr.values)
    np.testing.assert_allclose(m.stderr.values, m.tau.values / np.sqrt(k))
    np.testing.assert_array_equal(m.solved.values, k)
    assert int(m.runs) == 20_000 and m.tau.attrs["units"] == "s"
    assert np.all((m.lower < m.tau) & (m.tau < m.upper))
    if timeout is not None:
        assert np.all(k < 20_000)
        # ignoring the censored times would bias tau low by many standard errors
        naive = ds["tts_seconds"].where(ds.solved).mean("run").values
        assert np.all(tau - naive > 10 * m.stderr.values)
    # in sweeps: ceil(t / SWEEP), so tau / SWEEP + 1/2 on average
    s = tts.mean(ds, time="sweeps")
    assert np.all(np.abs(s.tau.values - (tau / SWEEP + 0.5)) < 4 * s.stderr.values)
    assert s.tau.attrs["units"] == "sweep"


def coverage(m, tau, n):
    """Fractions of the ``n`` intervals that miss ``tau`` below and above, and the coverage."""
    below = float((m.upper < tau).sum()) / n  # interval entirely below tau
    above = float((m.lower > tau).sum()) / n
    return below, above, 1 - below - above


def test_mean_interval_is_exact_without_censoring():
    n, c, tau = 4000, 0.95, 3.0
    m = tts.mean(synthetic(np.full(n, tau), 10, seed=1), confidence=c)
    below, above, cov = coverage(m, tau, n)
    assert abs(cov - c) < 4 * binomial_se(c, n)
    for miss in (below, above):  # equal tails
        assert abs(miss - (1 - c) / 2) < 4 * binomial_se((1 - c) / 2, n)


@pytest.mark.parametrize("runs, timeout", [(5, 3.0), (20, 0.9), (100, 0.3)])  # tau = 3
def test_mean_interval_is_conservative_with_censoring(runs, timeout):
    n, c, tau = 4000, 0.95, 3.0
    ds = synthetic(np.full(n, tau), runs, timeout=timeout, seed=2)
    assert (~ds.solved).any()
    m = tts.mean(ds, confidence=c)
    below, above, cov = coverage(m, tau, n)
    assert cov >= c - 4 * binomial_se(c, n)
    assert cov <= 0.99  # conservative, not uselessly wide
    for miss in (below, above):
        assert miss <= (1 - c) / 2 + 4 * binomial_se((1 - c) / 2, n)


def test_mean_with_no_run_solved():
    ds = make(np.full((1, 7), 10.0), timeout=2.0)
    m = tts.mean(ds, confidence=0.9)
    assert np.isnan(m.tau).all() and np.isnan(m.stderr).all() and int(m.solved[0]) == 0
    assert np.isinf(m.upper).all()
    np.testing.assert_allclose(m.lower.values, 7 * 2.0 / math.log(2 / 0.1))  # S / ln(2 / (1 - c))


# --------------------------------------------------------------------------- percentile


def test_percentile_exponential_law():
    ds = synthetic([1.0, 4.0], 300, timeout=5.0)
    q = np.array([0.0, 10.0, 50.0, 99.0])
    p = tts.percentile(ds, q, confidence=0.9)
    m = tts.mean(ds, confidence=0.9)
    factor = xr.DataArray(-np.log(1 - q / 100), dims="q", coords={"q": q})
    xr.testing.assert_allclose(p.exponential, m.tau * factor)
    xr.testing.assert_allclose(p.exponential_lower, m.lower * factor)
    xr.testing.assert_allclose(p.exponential_upper, m.upper * factor)
    assert p.empirical.dims == ("instance", "q") and p.exponential.dims == ("instance", "q")
    assert p.exponential.attrs["units"] == "s"
    median = tts.percentile(ds, 50)
    assert "q" not in median.dims and float(median.q) == 50.0
    xr.testing.assert_allclose(median.exponential.drop_vars("q"), m.tau * math.log(2))


def test_percentile_empirical_equals_numpy_when_all_solved():
    ds = synthetic([1.0, 2.0, 3.0], 101, seed=3)
    q = np.array([0.0, 1.0, 25.0, 33.3, 50.0, 90.0, 99.0, 99.9])
    for time in ("seconds", "sweeps"):
        p = tts.percentile(ds, q, time=time)
        expected = np.percentile(ds[tts.TIME_VARIABLES[time]].values, q, axis=-1).T
        np.testing.assert_allclose(p.empirical.values, expected, rtol=1e-13)
    expected = np.percentile(ds["tts_seconds"].values[1], 37.5)
    assert float(tts.percentile(ds, 37.5).empirical[1]) == pytest.approx(expected)


def test_percentile_empirical_with_censoring():
    ds = make([[1.0, 3.0, 2.0, 9.0, 9.0]], timeout=4.0)  # two runs censored at 4 s
    p = tts.percentile(ds, [0.0, 25.0, 50.0, 55.0, 60.0, 75.0, 90.0]).empirical.values[0]
    # sorted: 1, 2, 3, inf, inf at virtual index (R - 1) q / 100 = 0, 1, 2, 2.2, 2.4, 3, 3.6
    np.testing.assert_array_equal(p, [1.0, 2.0, 3.0, np.inf, np.inf, np.inf, np.inf])
    # below the censored fraction the empirical percentile estimates t_q of the exponential law
    tau, runs, q = 3.0, 4000, 40.0
    ds = synthetic([tau], runs, timeout=tau, seed=4)  # 37% censored
    t_q = -tau * math.log(1 - q / 100)
    se = math.sqrt(q / 100 * (1 - q / 100) / runs) / (math.exp(-t_q / tau) / tau)  # order statistic
    assert abs(float(tts.percentile(ds, q).empirical[0]) - t_q) < 4 * se
    assert np.isinf(ds.tts.percentile(99).empirical).all()


# --------------------------------------------------------------------------- from_timeouts


def frullani_mean(k, runs, timeout):
    """Exact posterior mean of tau, T / B(a, b) * -sum_j C(k, j) (-1)^j ln(b + j), in 50-digit decimals.

    (Frullani's integral, using sum_j C(k, j) (-1)^j = 0; the alternating sum cancels too much for floats.)
    """
    getcontext().prec = 50
    a, b = k + 1, runs - k + 1
    beta = Decimal(math.factorial(a - 1) * math.factorial(b - 1)) / Decimal(math.factorial(a + b - 1))
    total = -sum(Decimal(math.comb(k, j)) * (-1) ** j * Decimal(b + j).ln() for j in range(k + 1))
    return timeout * float(total / beta)


@pytest.mark.parametrize("k, runs", [(1, 10), (3, 10), (6, 25), (10, 10)])
def test_from_timeouts_posterior_mean_matches_closed_form(k, runs):
    r = tts.from_timeouts(counted(k, runs, timeout=2.5), timeout=2.5)
    assert int(r.solved) == k and int(r.runs) == runs and float(r.timeout) == 2.5
    assert float(r.tau) == pytest.approx(frullani_mean(k, runs, 2.5), rel=1e-10)


@pytest.mark.parametrize("k, runs", [(40, 200), (200, 200), (3, 5000)])
def test_from_timeouts_matches_brute_force_integration(k, runs):
    T, c = 0.7, 0.9
    r = tts.from_timeouts(counted(k, runs, timeout=T), timeout=T, confidence=c)
    a, b = k + 1, runs - k + 1
    posterior = stats.beta(a, b)
    lo, hi = posterior.ppf([1e-13, 1 - 1e-13])
    points = posterior.ppf([1e-6, 0.01, 0.5, 0.99, 1 - 1e-6])
    mean_tau = sum(integrate.quad(lambda s: T / -math.log1p(-s) * posterior.pdf(s), x0, x1, limit=500,
                                  epsabs=0)[0] for x0, x1 in zip([lo, *points], [*points, hi]))
    assert float(r.tau) == pytest.approx(mean_tau, rel=1e-7)
    s_lo, s_med, s_hi = posterior.ppf([(1 - c) / 2, 0.5, (1 + c) / 2])
    assert float(r.tau_median) == pytest.approx(T / -math.log1p(-s_med), rel=1e-9)
    assert float(r.lower) == pytest.approx(T / -math.log1p(-s_hi), rel=1e-9)
    assert float(r.upper) == pytest.approx(T / -math.log1p(-s_lo), rel=1e-9)


def test_from_timeouts_reduces_to_gamma_for_short_timeouts():
    k, runs, T, c = 5, 100_000, 1.0, 0.95
    r = tts.from_timeouts(counted(k, runs, timeout=T), confidence=c)
    # 1 / tau ~ Gamma(k + 1, rate R T); E[1 / x] = (R + 1) / k - 1/2 - (k + 1) / (12 (R + 2)) + O(k^2 / R^2)
    assert float(r.tau) == pytest.approx(T * ((runs + 1) / k - 0.5 - (k + 1) / (12 * (runs + 2))), rel=1e-7)
    rate = stats.gamma(k + 1, scale=1 / (runs * T))
    assert float(r.lower) == pytest.approx(1 / rate.ppf((1 + c) / 2), rel=1e-3)
    assert float(r.upper) == pytest.approx(1 / rate.ppf((1 - c) / 2), rel=1e-3)


def test_from_timeouts_with_no_success_gives_a_one_sided_bound():
    runs, T, c = 40, 3.0, 0.9
    r = tts.from_timeouts(counted(0, runs, timeout=T), confidence=c)
    assert int(r.solved) == 0
    assert np.isinf(r.tau).all() and np.isinf(r.upper).all()
    # s ~ Beta(1, R + 1): P(s > s_c) = (1 - s_c)^(R + 1) = 1 - c, so P(tau > T (R + 1) / ln(1 / (1 - c))) = c
    assert float(r.lower) == pytest.approx(T * (runs + 1) / math.log(1 / (1 - c)), rel=1e-10)
    assert float(r.tau_median) == pytest.approx(T * (runs + 1) / math.log(2), rel=1e-10)


def test_from_timeouts_recovers_tau_and_its_coverage():
    tau = np.array([2.0, 5.0])
    r = tts.from_timeouts(synthetic(tau, 2000, timeout=2.0, seed=5))
    wide = tts.from_timeouts(synthetic(tau, 2000, timeout=2.0, seed=5), confidence=0.9999)  # ~ +-4 sigma
    assert np.all((wide.lower.values <= tau) & (tau <= wide.upper.values))
    assert np.all(r.lower < r.tau_median) and np.all(r.tau_median < r.upper)
    # coverage over n datasets of R runs with T = tau / 10 (about 9.5 successes each)
    n, runs, c, tau = 2000, 100, 0.95, 3.0
    r = tts.from_timeouts(synthetic(np.full(n, tau), runs, timeout=tau / 10, seed=6), confidence=c)
    cov = float(((r.lower <= tau) & (tau <= r.upper)).mean())
    assert abs(cov - c) < 4 * binomial_se(c, n)
    # and the exact (binomial) coverage of the interval, computed independently
    k = np.arange(runs + 1)
    s = -math.expm1(-0.1)
    s_lo, s_hi = stats.beta.ppf((1 - c) / 2, k + 1, runs - k + 1), stats.beta.ppf((1 + c) / 2, k + 1, runs - k + 1)
    exact = stats.binom.pmf(k, runs, s)[(s_lo <= s) & (s <= s_hi)].sum()
    assert abs(cov - exact) < 4 * binomial_se(exact, n)


def test_from_timeouts_post_hoc_timeout_agrees_with_mean_of_full_runs():
    tau = np.array([2.0, 5.0])
    ds = synthetic(tau, 3000, seed=7)
    full = tts.mean(ds)
    timeout = xr.DataArray(tau / 10, dims="instance")
    r = tts.from_timeouts(ds, timeout=timeout)
    np.testing.assert_array_equal(r.solved.values, (ds["tts_seconds"] <= timeout).sum("run").values)
    assert np.all((r.lower <= full.tau) & (full.tau <= r.upper))
    # the timeout estimate is much less precise than the full runs
    assert np.all(r.upper - r.lower > 2 * (full.upper - full.lower))


def test_from_timeouts_default_timeout():
    ds = synthetic([2.0], 500, timeout=1.5, seed=8)
    by_tts, by_sweeps = tts.from_timeouts(ds), tts.from_timeouts(ds, time="sweeps")
    assert float(by_tts.timeout[0]) == 1.5 and float(by_sweeps.timeout[0]) == 1500.0
    xr.testing.assert_allclose(by_tts.tau, by_sweeps.tau * SWEEP)
    assert by_sweeps.tau.attrs["units"] == "sweep"
    # post-hoc shorter timeout: fewer successes
    shorter = tts.from_timeouts(ds, timeout=0.5)
    assert int(shorter.solved[0]) == int((ds["tts_seconds"] <= 0.5).sum()) < int(by_tts.solved[0])
    with pytest.raises(ValueError, match="timeout"):  # longer than the runs were made with
        tts.from_timeouts(ds, timeout=2.0)
    with pytest.raises(ValueError, match="timeout"):
        tts.from_timeouts(ds, timeout=-1.0)
    with pytest.raises(ValueError, match="a timeout is needed"):
        tts.from_timeouts(synthetic([2.0], 50))
    del ds.attrs["timeout_sweeps"]  # then the longest unsolved run
    assert float(tts.from_timeouts(ds, time="sweeps").timeout[0]) == 1500.0
    # a solver run without timeout records its sweep limit and timeout_given = 0: not a timeout
    unlimited = synthetic([2.0], 50).assign_attrs(timeout_sweeps=2**32 - 3, timeout_given=0)
    with pytest.raises(ValueError, match="a timeout is needed"):
        tts.from_timeouts(unlimited, time="sweeps")


def test_dask_input_stays_lazy():
    ds = synthetic([1.0, 3.0], 200, timeout=4.0, seed=19)
    lazy = ds.chunk({"instance": 1, "run": 50})
    mean, percentiles = lazy.tts.mean(), lazy.tts.percentile([10, 50])
    assert mean.tau.chunks is not None and percentiles.empirical.chunks is not None  # still lazy
    xr.testing.assert_allclose(mean.compute(), ds.tts.mean())
    xr.testing.assert_allclose(percentiles.compute(), ds.tts.percentile([10, 50]))
    xr.testing.assert_allclose(lazy.tts.from_timeouts(), ds.tts.from_timeouts())


# --------------------------------------------------------------------------- fit_growth


def growth_data(a, b, N, instances, runs, spread, replicas=None, seed=9):
    rng = np.random.default_rng(seed)
    shape = ((replicas,) if replicas else ()) + (len(N), instances)
    tau = np.exp(a + b * np.asarray(N, dtype=float)[:, None] + spread * rng.standard_normal(shape))
    dims = (("replica",) if replicas else ()) + ("N", "instance")
    coords = {"N": ("N", N, {"units": "variables"}), "instance": np.arange(instances)}
    return synthetic(tau, runs, seed=seed + 1, dims=dims, coords=coords)


@pytest.mark.parametrize("statistic", ["median", "mean"])
def test_fit_growth_recovers_a_and_b(statistic):
    a, b, N = -4.0, 0.04, np.arange(16, 129, 16)
    fit = tts.fit_growth(growth_data(a, b, N, 31, 50, spread=0.3), statistic=statistic)
    assert abs(float(fit.a) - a) < 4 * float(fit.a_stderr)
    assert abs(float(fit.b) - b) < 4 * float(fit.b_stderr)
    assert 0 < float(fit.b_stderr) < 0.002 and int(fit.points) == len(N)
    assert fit.b.attrs["units"] == "1/variables" and fit.tau.dims == ("N",) and fit.fit.dims == ("N",)
    np.testing.assert_allclose(fit.fit.values, np.exp(float(fit.a) + float(fit.b) * N))


def test_fit_growth_standard_errors_match_the_scatter():
    a, b, N, runs, replicas = -4.0, 0.04, np.arange(16, 129, 16), 20, 2000
    fit = tts.fit_growth(growth_data(a, b, N, 5, runs, spread=0.3, replicas=replicas, seed=10), statistic="mean")
    assert fit.b.dims == ("replica",)
    # E[ln tau_hat] = ln tau + digamma(R) - ln R for the uncensored MLE (a Gamma(R) sum / R): a shift of a only
    expected = {"a": a + special.digamma(runs) - math.log(runs), "b": b}
    for name in ("a", "b"):
        scatter = float(fit[name].std(ddof=1))
        typical = float(np.sqrt((fit[f"{name}_stderr"] ** 2).mean()))
        # relative error of the sample std over 2000 replicas ~1.6%, of the rms stderr (6 dof each) ~0.9%
        assert abs(typical / scatter - 1) < 0.08
        assert abs(float(fit[name].mean()) - expected[name]) < 4 * scatter / math.sqrt(replicas)


def test_fit_growth_exact_on_deterministic_times():
    a, b, N = 1.0, 0.1, np.array([10.0, 20.0, 40.0])
    t = np.broadcast_to(np.exp(a + b * N)[:, None, None], (3, 4, 6))
    ds = make(t, dims=("N", "instance"), coords={"N": N})
    for statistic in ("median", "mean"):
        fit = tts.fit_growth(ds, statistic=statistic)
        assert float(fit.a) == pytest.approx(a) and float(fit.b) == pytest.approx(b)
        assert float(fit.b_stderr) < 1e-10 and float(fit.a_stderr) < 1e-8
    two = tts.fit_growth(ds.isel(N=[0, 2]))
    assert float(two.b) == pytest.approx(b) and np.isnan(two.b_stderr) and np.isnan(two.a_stderr)
    # without an instance dimension, and with a minority of unsolved instances (tau = inf in the median)
    assert float(tts.fit_growth(ds.isel(instance=0)).b) == pytest.approx(b)
    hard = ds.copy(deep=True)
    hard["solved"][:, 0, :] = False
    assert float(tts.fit_growth(hard).b) == pytest.approx(b)


def test_fit_growth_errors():
    ds = growth_data(-4.0, 0.04, [16, 32], 3, 5, spread=0.0)
    with pytest.raises(ValueError, match="statistic"):
        tts.fit_growth(ds, statistic="mode")
    with pytest.raises(ValueError, match="'L'"):
        tts.fit_growth(ds, dim="L")
    with pytest.raises(ValueError, match="'run'"):
        tts.fit_growth(ds, dim="run")
    with pytest.raises(ValueError, match="at least 2 points"):
        tts.fit_growth(ds.isel(N=[0]))


# --------------------------------------------------------------------------- plot_survival and ks_test


def test_plot_survival_draws_curves_and_laws():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = synthetic([1.0, 2.0, 4.0], 200, timeout=6.0, seed=11)
    ax = tts.plot_survival(ds)
    assert len(ax.lines) == 6 and ax.get_yscale() == "log"
    empirical = ax.lines[0].get_ydata()
    assert empirical[0] == 1.0 and np.all(np.diff(empirical) <= 0) and np.all(empirical > 0)
    assert len(tts.plot_survival(ds, law=False).lines) == 3
    _, own = plt.subplots()
    assert ds.tts.plot_survival(ax=own, instance=[0, 2], time="sweeps") is own and len(own.lines) == 4
    assert len(tts.plot_survival(ds, instance=1).lines) == 2
    plt.close("all")


def test_ks_test_accepts_exponential_and_rejects_others():
    rng = np.random.default_rng(12)
    tau = np.array([1.0, 2.0, 5.0, 10.0, 0.3])
    exponential = tts.ks_test(synthetic(tau, 200, seed=13), n_mc_samples=2000)
    assert np.all(exponential.pvalue > 0.01)
    np.testing.assert_allclose(exponential.tau.values, synthetic(tau, 200, seed=13)["tts_seconds"].mean("run").values)
    uniform = tts.ks_test(make(rng.uniform(0, 2 * tau[:, None], (5, 200))), n_mc_samples=2000)
    shifted = tts.ks_test(make(0.5 * tau[:, None] + rng.exponential(tau[:, None], (5, 200))), n_mc_samples=2000)
    assert np.all(uniform.pvalue < 0.01) and np.all(shifted.pvalue < 0.01)
    with pytest.raises(ValueError, match="every run solved"):
        tts.ks_test(synthetic(tau, 200, timeout=3.0))


def test_ks_test_pvalue_is_the_lilliefors_one():
    x = np.random.default_rng(14).exponential(3.0, 60)
    ours = tts.ks_test(make(x[None, :]), n_mc_samples=4000)
    scipy_ = stats.goodness_of_fit(stats.expon, x, known_params={"loc": 0.0}, statistic="ks", n_mc_samples=4000,
                                   random_state=np.random.default_rng(15))
    assert float(ours.statistic[0]) == pytest.approx(scipy_.statistic, rel=1e-12)
    p = scipy_.pvalue
    assert abs(float(ours.pvalue[0]) - p) < 4 * math.sqrt(2 * p * (1 - p) / 4000)
    # p-values are uniform under the null; the plain KS law (tau taken as known) is far too conservative
    n = 1000
    data = synthetic(np.full(n, 2.0), 30, seed=16)
    null = tts.ks_test(data, n_mc_samples=2000)
    assert abs(float((null.pvalue < 0.1).mean()) - 0.1) < 4 * binomial_se(0.1, n)
    plain = np.array([stats.kstest(row, "expon", args=(0, row.mean())).pvalue for row in data["tts_seconds"].values])
    assert (plain < 0.1).mean() < 0.1 - 4 * binomial_se(0.1, n)


# --------------------------------------------------------------------------- accessor and validation


def test_accessor_delegates():
    ds = synthetic([1.0, 3.0], 100, timeout=4.0, seed=17).assign_coords(N=64)
    xr.testing.assert_identical(ds.tts.mean(time="sweeps", confidence=0.8), tts.mean(ds, "sweeps", 0.8))
    xr.testing.assert_identical(ds.tts.percentile([5, 50], confidence=0.9), tts.percentile(ds, [5, 50], "seconds", 0.9))
    xr.testing.assert_identical(ds.tts.from_timeouts(timeout=2.0), tts.from_timeouts(ds, 2.0))
    solved = synthetic([1.0, 3.0], 100, seed=18)
    xr.testing.assert_identical(solved.tts.ks_test(n_mc_samples=500, seed=3),
                                tts.ks_test(solved, n_mc_samples=500, seed=3))
    grown = growth_data(-4.0, 0.04, [16, 32, 48], 3, 20, spread=0.1)
    xr.testing.assert_identical(grown.tts.fit_growth(statistic="mean"), tts.fit_growth(grown, statistic="mean"))
    assert float(ds.tts.mean().N) == 64  # scalar coordinates are kept
    assert isinstance(ds.tts, tts.TimeToSolutionAccessor) and "tts_seconds" in ds.data_vars


def test_validation_errors():
    ds = synthetic([1.0], 20, timeout=2.0)
    with pytest.raises(ValueError, match="'run'"):
        tts.mean(ds.isel(run=0))
    with pytest.raises(ValueError, match="solved"):
        tts.mean(ds.drop_vars("solved"))
    with pytest.raises(ValueError, match="'tts_sweeps'"):
        tts.mean(ds.drop_vars("tts_sweeps"), time="sweeps")
    with pytest.raises(ValueError, match="time must be"):
        ds.tts.mean(time="tts")
    with pytest.raises(ValueError, match="solved"):
        tts.mean(ds.assign(solved=ds.solved.astype(int)))
    for c in (0, 1, 1.5, -0.2, float("nan")):
        with pytest.raises(ValueError, match="confidence"):
            ds.tts.mean(confidence=c)
        with pytest.raises(ValueError, match="confidence"):
            ds.tts.from_timeouts(confidence=c)
    for q in (100, -1, [5, 100], [[1, 2]], [], float("nan")):
        with pytest.raises(ValueError, match="q must"):
            ds.tts.percentile(q)
    with pytest.raises(ValueError, match="instance"):
        tts.plot_survival(ds.isel(instance=0), instance=0)
    with pytest.raises(ValueError, match="n_mc_samples"):
        tts.ks_test(synthetic([1.0], 20), n_mc_samples=0)
