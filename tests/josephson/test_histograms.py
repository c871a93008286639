"""Escape rates from switching histograms (issue 38, part 1): the Fulton-Dunkleberger inversion."""

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.josephson import histograms

A, B = 1e-6, 25.0  # an escape rate A exp(B gamma) per time unit


def _samples(n, gamma_dot, seed):
    """Switching biases under a ramp from 0 for the rate A exp(B gamma): the exact inverse transform."""
    u = np.random.default_rng(seed).random(n)
    return np.log1p(-np.log1p(-u) * B * gamma_dot / A) / B


def _bin_mean(lower, upper):
    """The mean of A exp(B gamma) over each bin: what the inversion estimates, exactly in expectation."""
    return A * (np.exp(B * upper) - np.exp(B * lower)) / (B * (upper - lower))


def _z(r, rate="rate", stderr="rate_stderr"):
    kept = np.isfinite(r[rate].values)
    return (r[rate].values[kept] - _bin_mean(r.bias_lower.values, r.bias_upper.values)[kept]) / r[stderr].values[kept]


def test_the_inversion_recovers_a_known_rate_within_its_binomial_errors():
    r = ge.josephson.rates_from_histogram(_samples(50_000, 1e-4, seed=3), sweep_rate=1e-4, bins=30)
    z = _z(r)
    assert z.size >= 28 and np.all(np.abs(z) < 4)
    # the stated errors are the spread: mean z^2 near 1 (its standard error sqrt(2 / n))
    assert abs(np.mean(z**2) - 1) < 4 * np.sqrt(2 / z.size)
    assert r.dropped.values[-1] == histograms.LAST and (r.dropped.values[:-1] == "").all()
    assert int(r.survivors[0]) == 50_000 and int(r["switches"].sum()) == 50_000


def test_counts_with_edges_and_unswitched_ramps_give_the_same_rates_as_the_samples():
    sample = _samples(5000, 1e-4, seed=4)
    sample[sample > 0.35] = np.nan  # these ramps stopped before switching: survivors in every bin
    edges = np.linspace(0.0, 0.35, 15)
    from_samples = ge.josephson.rates_from_histogram(sample, sweep_rate=1e-4, bins=edges)
    counts = np.histogram(sample[np.isfinite(sample)], bins=edges)[0]
    from_counts = ge.josephson.rates_from_histogram(counts=counts, edges=edges, sweep_rate=1e-4,
                                                    unswitched=int(np.isnan(sample).sum()))
    np.testing.assert_array_equal(from_samples.rate.values, from_counts.rate.values)
    assert np.isfinite(from_counts.rate.values[-1])  # the unswitched survive the last bin: it has a rate
    assert np.all(np.abs(_z(from_counts)) < 4)


def test_empty_bins_are_dropped_with_their_reason_and_few_counts_are_flagged():
    counts = np.array([3, 0, 40, 200, 50, 0])
    r = ge.josephson.rates_from_histogram(counts=counts, edges=np.arange(7) * 0.1, sweep_rate=1.0)
    assert list(r.dropped.values) == ["", histograms.EMPTY, "", "", histograms.LAST, histograms.ABOVE]
    assert np.isnan(r.rate.values[[1, 4, 5]]).all() and np.isfinite(r.rate.values[[0, 2, 3]]).all()
    assert list(r.few_counts.values) == [True, False, False, False, False, False]


def test_several_sweep_rates_become_a_dimension_and_combine_into_one_curve():
    ramps = [1e-5, 1e-4, 1e-3]
    samples = np.stack([_samples(20_000, g, seed=10 + i) for i, g in enumerate(ramps)])
    r = ge.josephson.rates_from_histogram(samples, sweep_rate=ramps, bins=40, combine=True)
    assert r.rate.dims == ("sweep_rate", "bias") and list(r.sweep_rate.values) == ramps
    # slower ramps switch at lower bias: the combined curve spans the union of their ranges
    resolved = np.isfinite(r.rate.values)
    assert np.isfinite(r.rate_all.values).sum() > max(resolved.sum(axis=1))
    z = _z(r, "rate_all", "rate_all_stderr")
    assert np.all(np.abs(z) < 4)
    for i in range(3):
        assert np.all(np.abs(_z(r.isel(sweep_rate=i))) < 4)


def test_a_switching_dataset_goes_in_unchanged_and_through_the_accessor():
    ds = ge.switching_currents(damping=1.0, D=0.1, dgamma=[2e-4, 4e-4], h=0.02, model="overdamped",
                               realizations=400, seed=5, backend="cpu", progress=False)
    r = ds.fpt.rates_from_histogram(bins=12)
    direct = ge.josephson.rates_from_histogram(ds.switching_current.transpose("dgamma", ...).values,
                                               sweep_rate=ds.dgamma.values / 0.02, bins=12)
    np.testing.assert_array_equal(r.rate.values, direct.rate.values)
    np.testing.assert_array_equal(r.dgamma.values, ds.dgamma.values)  # the run's own coordinate is kept


@pytest.mark.slow
def test_histograms_of_the_rates_method_give_back_its_escape_rates():
    """Issue 38's inversion check: histograms drawn from switching_currents(method="rates") at 3
    sweep rates give back the escape rates the same run measured (escape_rates of the junction),
    within 4 combined standard errors in at least 80% of the bins."""
    dgammas = [1e-7, 3e-7, 1e-6]  # adiabatic: the escape rate stays below 1% of the relaxation rate
    ds = ge.switching_currents(V0=1.0, damping=1.0, D=0.1, h=0.02, model="overdamped", dgamma=dgammas,
                               realizations=20_000, method="rates", rel_error=0.1, seed=7, backend="cpu",
                               progress=False)
    r = ds.fpt.rates_from_histogram(bins=25)
    log_rate = np.log(ds.rate.values)
    within = []
    for i in range(len(dgammas)):
        one = r.isel(sweep_rate=i)
        kept = np.isfinite(one.rate.values) & ~one.few_counts.values
        for lower, upper, rate, stderr in zip(one.bias_lower.values[kept], one.bias_upper.values[kept],
                                              one.rate.values[kept], one.rate_stderr.values[kept]):
            grid = np.linspace(lower, upper, 41)
            if grid[0] < ds.rate_gamma.values[0] or grid[-1] > ds.rate_gamma.values[-1]:
                continue  # outside the measured rate curve
            curve = np.exp(np.interp(grid, ds.rate_gamma.values, log_rate))
            expected = np.trapezoid(curve, grid) / (upper - lower)
            relative = np.interp(grid.mean(), ds.rate_gamma.values, (ds.rate_stderr / ds.rate).values)
            combined = np.hypot(stderr, relative * expected)
            within.append(abs(rate - expected) < 4 * combined)
    assert len(within) >= 3 * 10
    assert np.mean(within) >= 0.8, np.mean(within)


@pytest.mark.parametrize("kwargs, message", [
    (dict(counts=[3, -1, 4], edges=[0, 1, 2, 3], sweep_rate=1.0), "counts must be non-negative integers"),
    (dict(counts=[3, 1.5, 4], edges=[0, 1, 2, 3], sweep_rate=1.0), "counts must be non-negative integers"),
    (dict(counts=[3, 1, 4], edges=[0, 2, 1, 3], sweep_rate=1.0), "edges must increase strictly"),
    (dict(counts=[3, 1, 4], edges=[0, 1, 1, 3], sweep_rate=1.0), "edges must increase strictly"),
    (dict(counts=[3, 1], edges=[0, 1, 2, 3], sweep_rate=1.0), r"counts must hold one count per bin \(3 bins"),
    (dict(counts=[3, 1, 4], edges=[0, 1, 2, 3], sweep_rate=0.0), "sweep_rate must be positive"),
    (dict(counts=[3, 1, 4], edges=[0, 1, 2, 3], sweep_rate=[1.0, 2.0]), "sweep_rate gives 2 value"),
    (dict(counts=[3, 1, 4], edges=[0, 1, 2, 3], sweep_rate=1.0, units="mA"), "units must be one of"),
    (dict(counts=[1, 0, 0], edges=[0, 1, 2, 3], sweep_rate=1.0), "at least 2 switching events"),
    (dict(samples=[0.5], sweep_rate=1.0), "a rate needs at least 2"),
    (dict(samples=[0.1, 0.5, 0.9], bins=[0.2, 0.6, 1.0], sweep_rate=1.0), "outside the bin edges"),
    (dict(samples=[0.1, 0.5], counts=[1, 1], sweep_rate=1.0), "either samples"),
    (dict(counts=[1, 1], sweep_rate=1.0), "edges="),
    (dict(counts=[1, 1], edges=[0, 1, 2]), "sweep_rate is required"),
    (dict(samples=[0.1, 0.5], bins="", sweep_rate=1.0), "bins must be a 1-D array"),
])
def test_bad_input_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ge.josephson.rates_from_histogram(**kwargs)
    with pytest.raises(TypeError, match="combine must be True or False"):
        ge.josephson.rates_from_histogram([0.1, 0.5], sweep_rate=1.0, combine="yes")
