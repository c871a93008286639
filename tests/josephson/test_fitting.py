"""fit_switching: recovery of known junctions from histograms drawn by the package, errors that cover, bad input."""

import math

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.josephson import fulton_dunkleberger as fd
from gpuensembles.models.josephson import junction, likelihood, theory

V0, DAMPING, THETA, GAMMA_DOT = 200.0, 0.5, 2.0, 1e-6  # Q = 28: the thermal model's regime


def draw(log_rate, count, seed, stream=0, low=0.3, high=0.99999):
    """Switching biases from the Fulton-Dunkleberger law of ``log_rate`` (the package's sampler)."""
    grid = np.linspace(low, high, 3000)
    curve = fd.make_curve(grid, np.exp(log_rate(grid)))
    return fd.draw(curve, GAMMA_DOT, seed=seed, stream=stream, first=0, count=count, gamma_start=low, gamma_end=high)


def thermal(g):
    return likelihood.thermal_log_rate(g, V0=V0, damping=DAMPING, theta=THETA)


def test_vectorized_thermal_rate_is_melnikov_meshkov():
    gamma = np.linspace(0.2, 0.97, 9)
    for damping, theta in ((0.5, 2.0), (0.01, 0.5), (20.0, 5.0)):
        exact = [theory.escape_rate(g, V0=V0, damping=damping, theta=theta, form="melnikov") for g in gamma]
        fast = np.exp(likelihood.thermal_log_rate(gamma, V0=V0, damping=damping, theta=theta))
        np.testing.assert_allclose(fast, exact, rtol=2e-4)


@pytest.mark.slow
def test_thermal_fit_recovers_the_junction_and_its_errors_cover_the_truth():
    sets, z_ic, z_theta = 24, [], []
    for seed in range(sets):
        fit = ge.josephson.fit_switching(draw(thermal, 1500, seed=seed), sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING)
        z_ic.append((float(fit.Ic) - 1.0) / float(fit.Ic_stderr))
        z_theta.append((float(fit.T_esc) - THETA) / float(fit.T_esc_stderr))
        assert 0 < float(fit.p_value) <= 1 and int(fit.dof) > 10
    for z in (np.array(z_ic), np.array(z_theta)):
        assert np.sum(np.abs(z) < 1.96) >= 20  # 95% intervals: 22.8 of 24 expected, sd 1.1
        assert 0.6 < z.std() < 1.5  # the stated error is the spread's size, neither far above nor below it
        assert abs(z.mean()) < 4 / math.sqrt(sets)  # no bias beyond 4 standard errors of the mean


def test_counts_give_the_fit_of_the_samples_they_bin():
    samples = draw(thermal, 4000, seed=7)
    edges = np.linspace(0.6, 0.95, 141)  # includes empty bins at both ends
    counts = np.histogram(samples, bins=edges)[0]
    assert counts[0] == 0 and counts[-1] == 0
    a = ge.josephson.fit_switching(samples, sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING)
    b = ge.josephson.fit_switching(counts=counts, edges=edges, sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING)
    for name in ("Ic", "T_esc"):
        assert abs(float(a[name]) - float(b[name])) < 0.3 * float(a[f"{name}_stderr"])
        assert float(b[f"{name}_stderr"]) == pytest.approx(float(a[f"{name}_stderr"]), rel=0.1)


def test_amperes_and_normalized_units_give_the_same_junction():
    R, C, Ic, T, sweep = 250.0, 88e-15, 0.748e-6, 1.2, 100.0  # the Li et al. (2007) junction, 100 Ic/s
    n = junction.normalize(R=R, C=C, Ic=Ic, T=T)
    v0, damping, theta, t0 = (float(n[k]) for k in ("V0", "damping", "theta", "time_unit"))
    gamma_dot = sweep * t0
    grid = np.linspace(0.0, 0.99999, 3000)  # hot and slow: it switches from 0.13 Ic up
    curve = fd.make_curve(grid, np.exp(likelihood.thermal_log_rate(grid, V0=v0, damping=damping, theta=theta)))
    gamma = fd.draw(curve, gamma_dot, seed=3, stream=0, first=0, count=3000, gamma_start=0.0, gamma_end=0.99999)
    a = ge.josephson.fit_switching(gamma * Ic, sweep_rate=sweep * Ic, units="A", C=C, R=R)
    b = ge.josephson.fit_switching(gamma, sweep_rate=gamma_dot, V0=v0, damping=damping)
    assert float(a.Ic) == pytest.approx(float(b.Ic) * Ic, rel=1e-6)
    assert float(a.T_esc) == pytest.approx(float(b.T_esc) * float(n["E_C"]) / junction.BOLTZMANN, rel=1e-5)
    assert abs(float(a.T_esc) - T) < 4 * float(a.T_esc_stderr)
    assert a.T_esc.attrs["units"] == "K" and a.Ic.attrs["units"] == "A"


@pytest.mark.slow
def test_escape_temperature_follows_the_bath_then_saturates_below_the_crossover():
    Ic, C, R, sweep = 10e-6, 5e-12, 100.0, 1e-3  # a Martinis-Devoret-Clarke-like junction: T* ~ 33 mK
    E_C = (2 * junction.ELEMENTARY_CHARGE) ** 2 / C
    t0, v0 = junction.HBAR / E_C, junction.HBAR * Ic / (2 * junction.ELEMENTARY_CHARGE) / E_C
    damping = t0 / (R * C)
    temps = np.array([0.01, 0.015, 0.15, 0.25])
    rows = []
    for k, T in enumerate(temps):
        def log_rate(g, theta=junction.BOLTZMANN * T / E_C):
            return np.logaddexp(np.log(theory.mqt_rate(g, V0=v0, damping=damping)),
                                likelihood.thermal_log_rate(g, V0=v0, damping=damping, theta=theta))
        grid = np.linspace(0.9, 0.99999, 3000)
        curve = fd.make_curve(grid, np.exp(log_rate(grid)))
        rows.append(fd.draw(curve, sweep / Ic * t0, seed=5, stream=k, first=0, count=2000, gamma_start=0.9,
                            gamma_end=0.99999) * Ic)
    fit = ge.josephson.fit_switching(np.array(rows), sweep_rate=sweep, units="A", C=C, R=R, temperature=temps)
    t_esc, error, star = fit.T_esc.values, fit.T_esc_stderr.values, fit.T_star.values
    assert np.all(t_esc[:2] > 2 * temps[:2])  # saturated, far above the bath
    assert abs(t_esc[0] - t_esc[1]) < 4 * math.hypot(error[0], error[1])
    assert np.all(np.abs(t_esc[2:] - temps[2:]) < 4 * error[2:])  # activation: the bath's temperature
    assert np.all((star > 0.02) & (star < 0.05)) and np.all(t_esc[2:] > star[2:])
    quantum = ge.josephson.fit_switching(np.array(rows[:2]), sweep_rate=sweep, units="A", C=C, R=R,
                                         temperature=temps[:2], model="quantum")
    assert np.all(np.abs(quantum.Ic.values - Ic) < 4 * quantum.Ic_stderr.values)
    assert np.all(quantum.p_value.values > 1e-3)


def test_a_ramp_that_starts_close_to_the_data_is_fitted_from_its_start():
    low = 0.84  # the ramps start where a ramp from 0 would have switched one time in ten
    gamma = draw(thermal, 3000, seed=11, low=low)
    fit = ge.josephson.fit_switching(gamma, sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING, ramp_start=low)
    assert abs(float(fit.T_esc) - THETA) < 4 * float(fit.T_esc_stderr)
    assert abs(float(fit.Ic) - 1.0) < 4 * float(fit.Ic_stderr)
    blind = ge.josephson.fit_switching(gamma, sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING)
    assert abs(float(blind.T_esc) - THETA) > 4 * float(blind.T_esc_stderr)  # what the start is there for
    with pytest.raises(ValueError, match="ramp_start"):
        ge.josephson.fit_switching(gamma, sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING, ramp_start=0.9)


def test_fitted_damping_warns_when_the_data_cannot_tell_it():
    with pytest.warns(RuntimeWarning, match="hardly constrain the damping"):
        ge.josephson.fit_switching(draw(thermal, 500, seed=1), sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING,
                                   fit_damping=True)


def test_result_carries_the_model_curve_and_the_correlation():
    fit = ge.josephson.fit_switching(draw(thermal, 1000, seed=2), sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING)
    assert list(fit.parameter.values) == ["Ic", "theta"]
    assert fit.correlation.sel(parameter="Ic", parameter_="Ic") == pytest.approx(1.0)
    assert 0.9 < float(fit.correlation.sel(parameter="Ic", parameter_="theta")) < 1.0
    # the fitted CDF is the data's within the Kolmogorov band (4 x 1 / sqrt(n) covers its 0.9999 quantile)
    assert float(np.max(np.abs(fit.model_cdf - fit.empirical_cdf))) < 4 / math.sqrt(1000)


SAMPLES = np.linspace(0.80, 0.9, 50)


@pytest.mark.parametrize("kwargs, match", [
    (dict(counts=[3, -1, 4], edges=[0.8, 0.85, 0.9, 0.95]), "counts"),
    (dict(counts=[30, 1, 4], edges=[0.8, 0.9, 0.85, 0.95]), "edges must increase"),
    (dict(data=SAMPLES, sweep_rate=0.0), "sweep_rate"),
    (dict(data=SAMPLES, C=1e-12), "C and R are for units='A'"),
    (dict(data=SAMPLES * 1e-6, units="A", C=1e-12, R=10.0, V0=None, damping=None, sweep_rate=1e-3), None),
    (dict(data=SAMPLES * 1e-6), "looks\nlike amperes|looks like amperes|use units='A'"),
    (dict(data=SAMPLES, units="A", V0=None, damping=None, C=1e-12, R=10.0), "looks normalized"),
    (dict(data=SAMPLES[:10]), "at least 20"),
    (dict(data=SAMPLES, temperature=[0.1, 0.2]), "temperature"),
    (dict(data=SAMPLES, model="classical"), "model"),
    (dict(data=SAMPLES, model="simulated", fit_damping=True), "fit_damping"),
    (dict(data=-SAMPLES), "positive"),
    (dict(data=SAMPLES, V0=None), "V0 is required"),
])
def test_bad_input_names_the_field(kwargs, match):
    call = dict(sweep_rate=1e-6, V0=V0, damping=DAMPING) | kwargs
    if match is None:  # the same data in amperes with C and R is fine: the control of the case above
        ge.josephson.fit_switching(**call)
        return
    with pytest.raises(ValueError, match=match):
        ge.josephson.fit_switching(**call)


#: The simulated fit's junction: Q = sqrt(V0) / damping = 10 instead of DAMPING's 28. A forward-flux trial
#: lasts about an energy relaxation time, 1 / damping, in steps of 0.05 / sqrt(V0) (simulated_model.STEP),
#: so a rate table costs steps in proportion to Q: at Q = 28 the fit's ~20 tables took 10 min of CI, at
#: Q = 10 a third of that. Still underdamped, and Mel'nikov-Meshkov's rate (the truth the samples are
#: drawn from) holds at any damping. The tables' share of the error is larger here (the simulated fit's
#: Ic error is 1.9 times the analytic one, against 1.1 at Q = 28), so the 4-error band is wider too.
SIMULATED_DAMPING = math.sqrt(V0) / 10


@pytest.mark.slow
def test_simulated_fit_recovers_a_thermal_junction_and_adds_the_simulations_error():
    def log_rate(g):
        return likelihood.thermal_log_rate(g, V0=V0, damping=SIMULATED_DAMPING, theta=THETA)

    gamma = draw(log_rate, 2000, seed=3)
    kw = dict(sweep_rate=GAMMA_DOT, V0=V0, damping=SIMULATED_DAMPING)
    simulated = ge.josephson.fit_switching(gamma, model="simulated", rel_error=0.3, backend="cpu", seed=1, **kw)
    analytic = ge.josephson.fit_switching(gamma, **kw)
    for name, truth in (("Ic", 1.0), ("T_esc", THETA)):
        assert abs(float(simulated[name]) - truth) < 4 * float(simulated[f"{name}_stderr"])
        assert float(simulated[f"{name}_stderr"]) > float(analytic[f"{name}_stderr"])  # the rate table's share
    assert simulated.attrs["model"] == "simulated" and float(simulated.p_value) > 1e-3


def test_goodness_of_fit_counts_a_simulated_tables_own_noise():
    """A table of the true rate with the noise of ``rel_error=0.3``, read at the truth: a correct model.

    Pearson's chi-square reads the table's noise as a misfit; with the expected counts' covariance
    over the table redrawn within its errors beside their Poisson variance, the p-values of data
    drawn from the truth are uniform.
    """
    from scipy import stats

    from gpuensembles.models.josephson import fitting, simulated_model

    gamma = np.linspace(0.6, 0.97, simulated_model.TABLE_BIASES)
    thetas = THETA * np.asarray(simulated_model.TABLE_THETAS)
    exact = np.stack([likelihood.thermal_log_rate(gamma, V0=V0, damping=DAMPING, theta=t) for t in thetas])
    truth = dict(Ic=1.0, theta=THETA)
    with_noise, pearson = [], []
    for seed in range(12):
        data = likelihood.Histogram(draw(thermal, 2000, seed=200 + seed), None, None, 0, GAMMA_DOT, V0)
        rng = np.random.default_rng(seed)
        table = simulated_model._model(gamma, thetas, exact + 0.3 * rng.standard_normal(exact.shape),
                                       np.full(exact.shape, 0.3), 1.0, DAMPING)
        redrawn = [(table.resample(rng), truth) for _ in range(fitting.RESAMPLES)]
        with_noise.append(fitting._chi_square(table, data, truth, 0, redrawn)[2])
        pearson.append(fitting._chi_square(table, data, truth, 0)[2])
    assert sum(p < 1e-3 for p in pearson) >= 10  # the case means something: Pearson's alone rejects the truth
    assert sum(p < 0.01 for p in with_noise) <= 1  # uniform p: two or more of 12 below 0.01 has chance 0.6%
    assert stats.kstest(with_noise, "uniform").pvalue > 1e-3


def test_simulated_fit_recentres_its_table_on_the_critical_current_it_finds(monkeypatch):
    """A table holds the Q of its centre: a maximum found off it is fitted again on a table centred there.

    The tables here are the thermal rate at the centre's V0 (exact, and as Q-bound as a simulated one).
    """
    from gpuensembles.models.josephson import fitting, simulated_model

    centres = []

    def table(start, data, damping, *, coarse=False, **_):
        c0, theta0 = float(start["Ic"]), float(start["theta"])
        centres.append(c0)
        gamma = np.linspace(0.6 / c0, min(0.97 / c0, 1 - 1e-3), simulated_model.TABLE_BIASES)
        thetas = theta0 * np.asarray(simulated_model.TABLE_THETAS)
        log_rate = np.stack([likelihood.thermal_log_rate(gamma, V0=c0 * data.V0_unit, damping=damping, theta=t)
                             for t in thetas])
        return simulated_model._model(gamma, thetas, log_rate, np.full(log_rate.shape, 1e-3), c0, damping)

    monkeypatch.setattr(simulated_model, "simulated", table)
    monkeypatch.setattr(fitting, "_simulated_starts", lambda o, conv, data: [dict(Ic=1.02, theta=THETA)])
    fit = ge.josephson.fit_switching(draw(thermal, 4000, seed=5), sweep_rate=GAMMA_DOT, V0=V0, damping=DAMPING,
                                     model="simulated", backend="cpu")
    Ic, error = float(fit.Ic), float(fit.Ic_stderr)
    assert abs(centres[0] - Ic) > 2 * error  # the first table was far off: the case means something
    assert len(centres) > 1 and abs(centres[-1] - Ic) <= fitting.CENTRED * error
    assert abs(Ic - 1.0) < 4 * error


def test_simulated_table_interpolates_the_rate_between_its_temperatures_and_biases():
    from gpuensembles.models.josephson import simulated_model

    gamma = np.linspace(0.75, 0.9, simulated_model.TABLE_BIASES)
    thetas = THETA * np.asarray(simulated_model.TABLE_THETAS)
    table = np.stack([likelihood.thermal_log_rate(gamma, V0=V0, damping=DAMPING, theta=t) for t in thetas])
    read = simulated_model._interpolator(gamma, 1.0 / thetas, table)
    x = np.linspace(0.76, 0.89, 50)
    for theta in (0.85 * THETA, 1.05 * THETA, 1.2 * THETA):
        exact = likelihood.thermal_log_rate(x, V0=V0, damping=DAMPING, theta=theta)
        np.testing.assert_allclose(read(x, 1.0 / theta), exact, atol=2e-3)  # 0.2% in the rate
    beyond = read(np.array([0.70, 0.95]), 1.0 / THETA)  # linear beyond the biases, no polynomial excursion
    exact = likelihood.thermal_log_rate(np.array([0.70, 0.95]), V0=V0, damping=DAMPING, theta=THETA)
    assert np.all(np.abs(beyond - exact) < 1.0)  # a third of the table's range beyond it: within a factor e
