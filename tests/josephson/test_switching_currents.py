"""Switching currents under a bias ramp: units, ramp semantics, Fulton-Dunkleberger, warm start."""

import functools
import math
import time

import numpy as np
import pytest
from scipy import stats

import gpuensembles as ge
from gpuensembles.models.josephson import junction as josephson
from gpuensembles.models.josephson import theory

from .. import z_score

# Overdamped, theta = 0.1, ramp 1e-4 per time unit: the median switches where
# Delta U / theta ~ 5, so the stationary rate is well defined, and it is cheap on a CPU.
OVERDAMPED = dict(V0=1.0, damping=1.0, D=0.1, h=0.02, model="overdamped")
GAMMA_DOT = 1e-4


def test_li2007_conversion():
    u = josephson.normalize(R=250, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200, h=1e-4)
    assert float(u["V0"]) == pytest.approx(211, rel=0.005)
    assert float(u["damping"]) == pytest.approx(4.11, rel=0.002)
    assert float(u["theta"]) == pytest.approx(14.2, rel=0.002)
    assert float(u["D"]) == pytest.approx(float(u["damping"] * u["theta"]))
    assert float(u["dgamma"]) == pytest.approx(1.8e-12, rel=0.01)  # the issue's ~1.8e-12 per step
    assert float(u["time_unit"]) == pytest.approx(9.04e-11, rel=0.001)


def test_physical_arrays_become_dimensions():
    u = josephson.normalize(R=250, C=88e-15, Ic=0.748e-6, T=[0.6, 1.2], sweep_rate=200, h=1e-4)
    assert u["theta"].dims == ("T",) and u["V0"].ndim == 0
    assert float(u["theta"][1] / u["theta"][0]) == pytest.approx(2.0)


@pytest.mark.parametrize("name, value", [("C", 88.0), ("C", -1e-15), ("R", 0.0), ("T", np.nan), ("Ic", 5.0),
                                         ("sweep_rate", -200.0)])
def test_unphysical_units_are_refused(name, value):
    physical = dict(R=250, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200)
    with pytest.raises(ValueError, match=name):
        ge.switching_currents(physical={**physical, name: value}, h=1e-4, realizations=2, backend="cpu")


@pytest.mark.parametrize("kwargs, message", [
    (dict(dgamma=-1e-6), "dgamma"),
    (dict(dgamma=0.0), "dgamma"),
    (dict(h=0.5), "h is too large"),
    (dict(gamma_start=1.2), "gamma_start"),
    (dict(gamma_start="cold"), "gamma_start"),
    (dict(gamma_end=1.5), "gamma_end"),
    (dict(start="hot"), "start"),
    (dict(passage="far"), "passage"),
    (dict(physical=dict(R=250, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200)), "either physical"),
    (dict(D=None), "required"),
    (dict(dgamma=1e-17), "2\\*\\*53"),
])
def test_bad_ramp_input(kwargs, message):
    base = dict(damping=1.0, D=0.1, dgamma=1e-6, h=0.02, realizations=2, backend="cpu")
    with pytest.raises(ValueError, match=message):
        ge.switching_currents(**{**base, **kwargs})


def test_ramp_is_exact_from_the_step_count():
    # switching_current = gamma_start + steps * dgamma, in float64, whatever the step count
    ds = ge.switching_currents(damping=1.0, D=0.1, dgamma=3e-6, h=0.02, realizations=50, seed=1, backend="cpu",
                               gamma_start=0.1)
    assert ds.switched.all()
    np.testing.assert_array_equal(ds.switching_current.values, 0.1 + ds.steps.values * 3e-6)
    # a realization that has not switched when the ramp reaches gamma_end is reported as such
    stopped = ge.switching_currents(damping=1.0, D=0.1, dgamma=3e-6, h=0.02, realizations=50, seed=1, backend="cpu",
                                    gamma_start=0.1, gamma_end=float(ds.switching_current.median()))
    assert 0 < int(stopped.switched.sum()) < 50
    assert np.isnan(stopped.switching_current.where(~stopped.switched)).all()
    limit = math.floor((float(stopped.attrs["gamma_end"]) - 0.1) / 3e-6)
    assert int(stopped.steps.max()) == limit


def test_physical_output_in_amperes():
    physical = dict(R=250, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=2e7)  # a fast ramp, cheap
    ds = ge.switching_currents(physical=physical, h=2e-3, realizations=16, seed=1, backend="cpu", gamma_start=0.1)
    assert ds.switching_current_A.attrs["units"] == "A"
    np.testing.assert_allclose(ds.switching_current_A.values, ds.switching_current.values * 0.748e-6)
    assert ds.attrs["physical_T"] == 1.2 and ds.attrs["theta_normalized"] == pytest.approx(14.2, rel=0.002)


def _fd_rate(h):
    # exact overdamped first-passage rate to the barrier top, with the barrier moved out by
    # the BGK shift that accounts for checking once per step
    shift = theory.discrete_monitoring_shift(D=OVERDAMPED["D"], damping=1.0, h=h)

    def rate(g):
        return 1.0 / theory.overdamped_mfpt(V0=1.0, damping=1.0, gamma=g, D=OVERDAMPED["D"],
                                             b=theory.barrier_top(g) + shift)
    return rate


@pytest.mark.slow
def test_overdamped_switching_matches_fulton_dunkleberger():
    # twice the ramp rate of the other tests, from gamma = 0.3 (no switch among 5000 below 0.31):
    # 2.4x fewer steps; at 1/Gamma ~ 1/(2e-4 |d ln Gamma / d gamma|) ~ 250 time units against a
    # relaxation time ~ 1 the ramp is still adiabatic
    h, gamma_start, n, gamma_dot = OVERDAMPED["h"], 0.3, 3000, 2 * GAMMA_DOT
    ds = ge.switching_currents(**OVERDAMPED, dgamma=gamma_dot * h, gamma_start=gamma_start, start="thermal",
                               realizations=n, seed=4, backend="cpu")
    assert ds.switched.all()
    sample = ds.switching_current.values
    rate = _fd_rate(h)
    cdf = functools.partial(theory.fulton_dunkleberger_cdf, gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start)
    assert stats.kstest(sample, cdf).pvalue > 0.01
    mean = theory.fulton_dunkleberger_mean(gamma_dot=gamma_dot, rate=rate, gamma_start=gamma_start)
    assert abs(z_score(sample.mean(), sample.std(ddof=1) / math.sqrt(n), mean)) < 4


@pytest.mark.slow
def test_warm_start_gives_the_full_ramp_distribution_faster():
    # colder than OVERDAMPED: at theta = 0.1 a ramp from 0 already has a 1e-9 chance to
    # switch at gamma ~ 3e-4, so the warm start (rightly) could not skip anything
    kw = dict(OVERDAMPED, D=0.05, dgamma=GAMMA_DOT * OVERDAMPED["h"], realizations=1000, backend="cpu")
    ge.switching_currents(**{**kw, "realizations": 4}, seed=1)  # compile outside the timing
    t0 = time.perf_counter()
    full = ge.switching_currents(**kw, seed=5)
    t1 = time.perf_counter()
    warm = ge.switching_currents(**kw, seed=6, gamma_start="auto")
    t2 = time.perf_counter()
    assert warm.attrs["start"] == "thermal" and warm.attrs["gamma_start"] > 0.1
    assert stats.ks_2samp(full.switching_current.values, warm.switching_current.values).pvalue > 0.01
    speedup = float(full.steps.sum()) / float(warm.steps.sum())
    print(f"\nwarm start at gamma = {warm.attrs['gamma_start']:.3f}: {speedup:.2f}x fewer steps, "
          f"{(t1 - t0) / (t2 - t1):.2f}x faster")
    assert speedup > 1.2
