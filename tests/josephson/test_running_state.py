"""Switching as a voltage shows it, and retrapping (:mod:`.running_physics`, ``criterion="voltage"``).

Physics against exact references: the noise-free retrapping current of ``theory``, the
escape criterion where nothing retraps, and the rate of switching into the running state
against direct simulations of the same definition (at constant bias, and under a ramp).
Tolerances come from the sample sizes (4 combined standard errors, KS tests at 1%).
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import gpuensembles as ge
from gpuensembles.models.josephson import theory

from .. import z_score

CPU = dict(backend="cpu", progress=False)
#: A hot junction of Q = 3.5 (V0 = 1, theta = 0.17): escapes start far below I_r = 0.356, and
#: most are retrapped; BAOAB at h = 0.05 (h * omega_p = 0.05).
HOT = dict(V0=1.0, damping=1 / 3.5, D=0.17 / 3.5, h=0.05, integrator="baoab", **CPU)


def quiet(function, **kwargs):
    """Run without the escape criterion's retrapping warning (the tests that want it ask for it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="criterion='escape'", category=RuntimeWarning)
        return function(**kwargs)


# --------------------------------------------------------------------------- theory


@pytest.mark.parametrize("Q", [10.0, 30.0, 100.0, 300.0])
def test_retrapping_current_has_its_large_q_limit(Q):
    # 4 / (pi Q) is the first order in 1/Q (energy balance on the undamped separatrix);
    # the orbit's value departs from it at the next order
    assert abs(theory.retrapping_current(Q) * math.pi * Q / 4.0 - 1.0) < 1.0 / Q**2


def test_retrapping_current_falls_with_q_and_is_ic_without_hysteresis():
    Q = np.array([0.3, 0.6, 0.8, 0.9, 1.0, 1.5, 2.0, 3.5, 5.0])
    values = theory.retrapping_current(Q)
    assert np.all(values[:3] == 1.0)  # beta_c = Q^2 below ~0.7: not hysteretic
    assert np.all(np.diff(values[2:]) < 0) and np.all(values[3:] < 1.0)
    assert theory.quality_factor(211.8, 4.11) == pytest.approx(3.541, abs=1e-3)  # the Li junction


@pytest.mark.parametrize("Q", [1.0, 1.5, 3.5, 10.0, 30.0, 100.0])
def test_theory_matches_the_noise_free_simulation(Q):
    # theta = 1e-8 and a ramp of 2e-8 a step: the simulated retrapping current is the
    # noise-free one to 1e-4 (the orbit's lag behind a ramp that slow); BAOAB has no
    # numerical heating (Euler's would lower the effective damping by h V0 / damping^2)
    expected = theory.retrapping_current(Q)
    ds = ge.retrapping_currents(V0=1.0, damping=1 / Q, D=1e-8 / Q, dgamma=2e-8, h=0.05,
                                gamma_start=min(1.0, 1.3 * expected), realizations=2, seed=1, **CPU)
    assert ds.retrapped.all()
    np.testing.assert_allclose(ds.retrapping_current.values, expected, rtol=0.005)


def test_low_noise_retrapping_is_within_one_percent_and_noise_retraps_earlier():
    Q = 3.5
    expected = theory.retrapping_current(Q)

    def run(theta):
        ds = ge.retrapping_currents(V0=1.0, damping=1 / Q, D=theta / Q, dgamma=1e-6, h=0.05, gamma_start=0.5,
                                    realizations=200, seed=2, **CPU)
        return ds.fpt.mean()

    cold, warm = run(1e-5), run(1e-2)
    assert abs(float(cold["mean"]) / expected - 1.0) < 0.01
    # noise knocks the running state out before the bias reaches I_r: the mean lies above it
    assert float(cold["mean"]) - expected > 4 * float(cold["stderr"])
    assert z_score(float(warm["mean"]), float(warm["stderr"]), float(cold["mean"]), float(cold["stderr"])) > 4


# --------------------------------------------------------------------------- the voltage criterion


def test_voltage_switch_is_the_first_escape_that_runs():
    # same seed, same start: up to the first escape both criteria follow the same path (up to
    # rounding: fastmath may contract the two kernels' arithmetic differently, which can move a
    # crossing that grazes the barrier top; with this damping paths that differ by rounding
    # converge again), so the voltage switch is not earlier, and the same wherever the first
    # escape ran away. The ramp
    # starts at 0.25, where a slip into the well to the left is e^{-2 pi gamma / theta} ~ 1e-4 as
    # likely as an escape (the escape criterion's barrier top is fixed, the voltage criterion's
    # home well moves with such a slip)
    kw = dict(HOT, dgamma=2e-6, gamma_start=0.25, realizations=400, seed=7)
    escape = quiet(ge.switching_currents, **kw)
    voltage = ge.switching_currents(criterion="voltage", running_wells=10, **kw)
    a, b = escape.switching_current.values, voltage.switching_current.values
    assert escape.switched.all() and voltage.switched.all()
    assert np.mean(b >= a) > 0.99
    # below I_r = 0.356 an escape of this junction runs 10 wells with P ~ 0.01-0.02 (escape_rates
    # with criterion="voltage" at 0.34-0.36); far above it most do
    retrapping = theory.retrapping_current(3.5)
    assert np.mean(b[a < retrapping] == a[a < retrapping]) < 0.1
    assert np.mean(b[a > 0.5] == a[a > 0.5]) > 0.5
    assert voltage.attrs["criterion"] == "voltage" and int(voltage.attrs["running_wells"]) == 10


def test_at_large_q_both_criteria_give_the_same_distribution():
    # Q = 30: I_r = 0.042, far below where this junction escapes: nothing retraps
    kw = dict(V0=1.0, damping=1 / 30, D=0.05 / 30, h=0.05, integrator="baoab", dgamma=5e-6, gamma_start=0.2,
              realizations=1500, **CPU)
    escape = ge.switching_currents(seed=1, **kw).switching_current.values
    voltage = ge.switching_currents(seed=2, criterion="voltage", **kw).switching_current.values
    assert stats.ks_2samp(escape, voltage).pvalue > 0.01


def test_switching_rate_is_the_inverse_mean_time_to_the_running_state():
    # at constant bias (a ramp of 1e-15 a step) the time to the running state from the thermal
    # well is exponential with the rate Gamma P / (1 + Gamma (1 - P) t_fail)
    gamma, wells = 0.45, 10
    rates = ge.escape_rates(gamma=gamma, rel_error=0.03, criterion="voltage", running_wells=wells, seed=3, **HOT)
    direct = ge.switching_currents(gamma_start=gamma, gamma_end=gamma + 1e-6, dgamma=1e-15, start="thermal",
                                   criterion="voltage", running_wells=wells, realizations=3000, seed=4, **HOT)
    assert direct.switched.all()
    times = direct.steps.values * HOT["h"]
    mean, se = times.mean(), times.std(ddof=1) / math.sqrt(times.size)
    rate, rate_se = float(rates.switching_rate), float(rates.switching_rate_stderr)
    assert abs(z_score(mean, se, 1 / rate, rate_se / rate**2)) < 4
    assert stats.kstest(times, "expon", args=(0, mean)).pvalue > 0.01
    assert 0.05 < float(rates.run_probability) < 0.6  # a point where both outcomes are common


@pytest.mark.slow
def test_run_probability_errors_cover_over_many_seeds():
    # a point that needs six splitting stages (P ~ 1e-3) at rel_error 0.2: over 100 seeds the
    # stated 95% intervals cover the many-seed mean as often as they claim, and the stated error
    # is the spread (the sample standard deviation of 100 values is good to ~7%)
    rs = [ge.escape_rates(gamma=0.3, rel_error=0.2, criterion="voltage", running_wells=10, seed=2000 + s, **HOT)
          for s in range(100)]
    assert min(int(r.run_interfaces) for r in rs) >= 3
    for name in ("run_probability", "switching_rate"):
        x = np.array([float(r[name]) for r in rs])
        se = np.array([float(r[f"{name}_stderr"]) for r in rs])
        covered = np.mean(np.abs(x - x.mean()) <= 1.96 * se)
        assert 0.88 <= covered <= 0.995, (name, covered)
        assert 0.75 < x.std(ddof=1) / np.median(se) < 1.33, name


def test_rates_method_matches_direct_ramps_under_the_voltage_criterion():
    # the whole chain (escape rate, run probability by splitting, Fulton-Dunkleberger) against
    # ramps simulated step by step, at a ramp slow enough for the adiabatic limit (epsilon ~ 0.01)
    kw = dict(HOT, dgamma=5e-7, criterion="voltage", running_wells=10)
    direct = ge.switching_currents(realizations=1000, seed=1, gamma_start="auto", **kw)
    rates = ge.switching_currents(method="rates", realizations=20_000, rel_error=0.1, seed=2, **kw)
    a, b = direct.switching_current.values, rates.switching_current.values
    assert direct.switched.all() and rates.switched.all()
    assert stats.ks_2samp(a, b).pvalue > 0.01
    # the rates' mean moves with the whole rate curve: its error is at most the integral of cdf_stderr
    curve_error = float(np.trapezoid(rates.cdf_stderr, rates.bias))
    se_a, se_b = a.std(ddof=1) / math.sqrt(a.size), math.hypot(b.std(ddof=1) / math.sqrt(b.size), curve_error)
    assert abs(z_score(a.mean(), se_a, b.mean(), se_b)) < 4
    escape = quiet(ge.switching_currents, realizations=1000, seed=1, gamma_start="auto",
                   **{k: v for k, v in kw.items() if k not in ("criterion", "running_wells")})
    assert escape.switching_current.mean() < theory.retrapping_current(3.5) < a.mean()  # what the issue is about
    for name in ("run_probability", "switching_rate", "failed_run_time"):
        assert rates[name].dims == ("rate_gamma",)


def test_same_numbers_for_any_chunking_under_the_voltage_criterion():
    kw = dict(HOT, dgamma=2e-5, realizations=12, seed=5, criterion="voltage", running_wells=5)
    eager = ge.switching_currents(**kw)
    lazy = ge.switching_currents(chunks=5, **kw)
    assert lazy.switching_current.chunks is not None
    np.testing.assert_array_equal(eager.steps.values, lazy.steps.values)
    rates = dict(HOT, gamma=[0.4, 0.5], rel_error=0.3, criterion="voltage", running_wells=5, seed=6)
    np.testing.assert_array_equal(ge.escape_rates(**rates).run_probability.values,
                                  ge.escape_rates(chunks=1, **rates).run_probability.compute().values)


# --------------------------------------------------------------------------- warnings


def test_the_escape_criterion_warns_below_the_retrapping_current():
    kw = dict(HOT, dgamma=5e-7, realizations=50, seed=7)  # escapes at 0.27 on average, I_r = 0.356
    with pytest.warns(RuntimeWarning, match=r"retrapping current I_r / I_c = 0\.356.*criterion='voltage'"):
        ge.switching_currents(**kw)
    with pytest.warns(RuntimeWarning, match="predicted by the Mel'nikov-Meshkov rate"):
        ge.switching_currents(chunks=25, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ge.switching_currents(criterion="voltage", running_wells=5, **kw)  # nothing to warn about


def test_euler_heating_warns_where_it_moves_the_running_state():
    kw = dict(V0=1.0, damping=0.1, D=1e-4, dgamma=1e-4, h=0.02, realizations=2, seed=1, **CPU)
    with pytest.warns(RuntimeWarning, match=r"damping is 200\.0% too small"):
        ge.retrapping_currents(integrator="euler", gamma_start=0.5, **kw)
    with pytest.warns(RuntimeWarning, match="heats the junction"):
        ge.switching_currents(criterion="voltage", running_wells=2, **kw)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, message", [
    (dict(criterion="current"), "criterion must be one of"),
    (dict(criterion="voltage", running_wells=0), "running_wells"),
    (dict(criterion="voltage", running_wells=2.5), "running_wells"),
    (dict(criterion="voltage", running_wells=10**8), "running_wells"),
    (dict(running_wells=10), "running_wells applies to criterion='voltage'"),
    (dict(criterion="voltage", model="overdamped", integrator="euler"), "needs model='underdamped'"),
    (dict(criterion="voltage", passage="next_well"), "passage='next_well' applies to criterion='escape'"),
    (dict(criterion="voltage", method="rates", running_wells=-3), "running_wells"),
])
def test_bad_running_state_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ge.switching_currents(**{**HOT, "dgamma": 1e-4, "realizations": 2, **kwargs})


@pytest.mark.parametrize("kwargs, message", [
    (dict(gamma_start=0.3), r"below the running state.*I_r / I_c = 0\.356"),
    (dict(gamma_start=0.0), "gamma_start"),
    (dict(gamma_start=1.2), "gamma_start"),
    (dict(gamma_start=0.6, gamma_end=0.7), "gamma_end"),
    (dict(gamma_start=0.6, gamma_end=-0.1), "gamma_end"),
    (dict(dgamma=-1e-4), "dgamma"),
    (dict(model="overdamped"), "no running state"),
])
def test_bad_retrapping_input_names_the_parameter(kwargs, message):
    base = dict(HOT, dgamma=1e-4, realizations=2, gamma_start=0.6)
    with pytest.raises(ValueError, match=message):
        ge.retrapping_currents(**{**base, **kwargs})


def test_a_swept_ramp_start_below_i_r_is_refused_at_that_point():
    with pytest.raises(ValueError, match=r"gamma_start = 0\.1 .*Q = sqrt\(V0\) / damping = 3\.5"):
        ge.retrapping_currents(**{**HOT, "dgamma": 1e-4, "realizations": 2, "gamma_start": [0.8, 0.1]})


# --------------------------------------------------------------------------- retrapping results


def test_retrapping_results_go_through_the_fpt_accessor_and_netcdf(tmp_path):
    ds = ge.retrapping_currents(**{**HOT, "dgamma": 1e-4, "realizations": 60, "gamma_start": 0.8,
                                   "gamma_end": 0.45, "seed": 3})
    assert 0 < int(ds.retrapped.sum()) < 60  # some still run when the ramp stops at 0.45
    stats_ = ds.fpt.mean(censored="drop")
    assert float(stats_["mean"]) > 0.45 and int(stats_["n_censored"]) == int((~ds.retrapped).sum())
    grid = np.linspace(0.3, 0.8, 11)
    cdf = ds.fpt.cdf(grid)
    below_end = grid <= 0.45  # the ramp stops within a step of 0.45
    assert np.isnan(cdf.values[below_end]).all()  # unknown where the ramp never went
    expected = [np.mean(ds.retrapped.values & (ds.retrapping_current.values <= x) | ~ds.retrapped.values)
                for x in grid[~below_end]]
    np.testing.assert_allclose(cdf.values[~below_end], expected)
    np.testing.assert_allclose(ds.fpt.survival(grid).values[~below_end], 1 - np.array(expected))
    path = tmp_path / "r.nc"
    ds.to_netcdf(path)
    back = ge.open_dataset(path)
    assert back.retrapping_current.attrs["long_name"] == "retrapping current I_r / I_c"
    np.testing.assert_array_equal(back.retrapping_current.values, ds.retrapping_current.values)
