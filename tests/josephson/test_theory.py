"""Analytic references against independent evaluations and known limits."""

import functools
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, optimize

from gpuensembles.models.josephson import theory


def test_barrier_limits_and_seed_value():
    assert theory.barrier(0.0) == pytest.approx(2.0)
    assert theory.barrier(1.0) == pytest.approx(0.0, abs=1e-12)
    # seed 000, Fig. 10: the quoted 0.0342 is damping * Delta U at gamma = 0.5, damping = 0.05
    assert 0.05 * theory.barrier(0.5) == pytest.approx(0.0342, abs=5e-5)
    # small-barrier expansion near gamma -> 1: Delta U ~ (4 sqrt 2 / 3) (1 - gamma)^(3/2)
    eps = 1e-4
    assert theory.barrier(1 - eps) == pytest.approx(4 * math.sqrt(2) / 3 * eps**1.5, rel=1e-3)


def test_barrier_equals_potential_difference():
    g = 0.37
    U = lambda x: -(np.cos(x) + g * x)  # noqa: E731
    assert theory.barrier(g) == pytest.approx(U(theory.barrier_top(g)) - U(theory.well_bottom(g)), rel=1e-12)


def test_overdamped_mfpt_against_independent_double_quadrature():
    V0, damping, gamma, D = 1.3, 0.7, 0.4, 0.35
    theta = D / damping
    a, b = theory.well_bottom(gamma), theory.barrier_top(gamma)
    U = lambda x: -V0 * (np.cos(x) + gamma * x)  # noqa: E731
    inner = lambda y: integrate.quad(lambda z: np.exp(-(U(z) - U(a)) / theta), -60, y, limit=400)[0]  # noqa: E731
    outer = integrate.quad(lambda y: np.exp((U(y) - U(a)) / theta) * inner(y), a, b, limit=200)[0]
    assert theory.overdamped_mfpt(V0=V0, damping=damping, gamma=gamma, D=D) == pytest.approx(
        damping / theta * outer, rel=1e-6)


def test_overdamped_mfpt_approaches_half_the_kramers_time_at_low_temperature():
    # Smoluchowski limit of Kramers: escape time 2 pi damping / sqrt(U''(a) |U''(b)|) exp(Delta U / theta).
    # The first passage to the barrier *top* takes half of it (from the top, half the
    # paths fall back), with corrections between O(theta) and O(sqrt(theta)) that vanish.
    gamma, damping = 0.5, 1.0
    barrier = theory.barrier(gamma)
    curv = math.sqrt(1 - gamma**2)  # U''(a) = |U''(b)| = V0 cos(arcsin gamma)
    errors = []
    for ratio in (20.0, 40.0, 80.0):
        theta = barrier / ratio
        half_kramers = math.pi * damping / curv * math.exp(ratio)
        mfpt = theory.overdamped_mfpt(V0=1.0, damping=damping, gamma=gamma, D=theta * damping)
        errors.append(mfpt / half_kramers - 1)
    assert 0 < errors[2] < errors[1] < errors[0] < 0.05
    for coarse, fine in zip(errors, errors[1:]):  # halving theta shrinks the error by sqrt(2) .. 2
        assert math.sqrt(2) < coarse / fine < 2


def test_mfpt_from_the_barrier_is_zero_and_grows_with_distance():
    kw = dict(V0=1.0, damping=1.0, gamma=0.5, D=0.3)
    b = theory.barrier_top(0.5)
    assert theory.overdamped_mfpt(**kw, x0=b) == pytest.approx(0.0, abs=1e-9)
    assert theory.overdamped_mfpt(**kw, x0=b - 0.5) < theory.overdamped_mfpt(**kw)


def test_bgk_constant():
    # -zeta(1/2) / sqrt(2 pi) = 0.5825971579...
    assert theory.BGK_BETA == pytest.approx(0.5825971579, rel=1e-9)
    from scipy import special

    assert theory.BGK_BETA == float(-special.zeta(0.5) / math.sqrt(2.0 * math.pi))  # the literal is exact
    assert theory.discrete_monitoring_shift(D=0.5, damping=2.0, h=0.01) == pytest.approx(
        theory.BGK_BETA * math.sqrt(1.0) / 2.0 * 0.1)
    assert theory.discrete_monitoring_shift(D=0.5, damping=2.0, h=0.01, model="underdamped") == 0.0


# --------------------------------------------------------------------------- rates


def test_separatrix_action_approaches_the_cubic_limit():
    for g in (0.99, 0.999):
        cubic = 36 * theory.barrier(g) / (5 * theory.plasma_frequency(g))
        assert theory.separatrix_action(g) == pytest.approx(cubic, rel=2e-3)


def test_melnikov_depopulation_limits():
    for delta in (1e-4, 1e-3):
        assert theory.melnikov_depopulation(delta) == pytest.approx(delta, rel=5 * math.sqrt(delta))
    assert theory.melnikov_depopulation(50.0) == pytest.approx(1.0, abs=1e-6)
    values = [theory.melnikov_depopulation(d) for d in (0.1, 1.0, 10.0)]
    assert values == sorted(values)


def test_action_and_melnikov_factor_over_arrays_equal_independent_quadratures():
    """All biases at once, against SciPy's adaptive quadrature of each definition, bias by bias."""
    gamma = np.array([0.1, 0.5, 0.9, 0.99])

    def action(g):  # 2 int v dphi from the left turning point to the barrier top
        U = lambda x: -(np.cos(x) + g * x)  # noqa: E731
        top = theory.barrier_top(g)
        left = optimize.brentq(lambda x: U(x) - U(top), -np.pi - np.arcsin(g), np.arcsin(g), xtol=1e-14)
        return 2 * integrate.quad(lambda x: np.sqrt(max(2 * (U(top) - U(x)), 0.0)), left, top, limit=200,
                                  epsabs=0, epsrel=1e-12)[0]

    assert theory.separatrix_action(gamma) == pytest.approx([action(g) for g in gamma], rel=1e-9)
    delta = np.array([1e-3, 0.1, 1.0, 10.0])

    def factor(d):  # exp[(1/pi) int_0^inf ln(1 - exp(-d (x^2 + 1/4))) dx / (x^2 + 1/4)]
        f = lambda x: np.log(-np.expm1(-d * (x * x + 0.25))) / (x * x + 0.25)  # noqa: E731
        return math.exp(integrate.quad(f, 0, np.inf, limit=400, epsabs=0, epsrel=1e-12)[0] / np.pi)

    assert theory.melnikov_depopulation(delta) == pytest.approx([factor(d) for d in delta], rel=1e-9)
    rate = theory.rate_formula("underdamped", 2.0, 0.3, 0.05)(gamma)
    assert rate.shape == gamma.shape
    assert rate == pytest.approx([theory.escape_rate(g, V0=2.0, damping=0.3, theta=0.05) for g in gamma], rel=1e-14)


def test_rate_forms_limits():
    kw = dict(V0=1.0, theta=0.05)
    g = 0.5
    tst = theory.escape_rate(g, damping=1.0, form="tst", **kw)
    # Kramers' factor sqrt(1 + alpha^2) - alpha, alpha = damping / (2 omega_b)
    alpha = 1.0 / (2 * theory.plasma_frequency(g))
    assert theory.escape_rate(g, damping=1.0, form="kramers", **kw) == pytest.approx(
        tst * (math.sqrt(1 + alpha**2) - alpha))
    # weak damping: energy diffusion, rate -> delta * TST for Mel'nikov and BHL
    weak = 1e-6  # delta ~ 1e-4: corrections O(sqrt(delta)) ~ 1%
    delta = weak * theory.separatrix_action(g) / kw["theta"]
    for form in ("melnikov", "bhl"):
        assert theory.escape_rate(g, damping=weak, form=form, **kw) == pytest.approx(delta * tst, rel=0.05)
    # moderate-to-strong damping: Mel'nikov -> Kramers, BHL -> TST
    assert theory.escape_rate(g, damping=2.0, form="melnikov", **kw) == pytest.approx(
        theory.escape_rate(g, damping=2.0, form="kramers", **kw), rel=1e-6)
    assert theory.escape_rate(g, damping=50.0, form="bhl", **kw) == pytest.approx(tst, rel=1e-3)
    # overdamped Smoluchowski limit of Kramers equals the strong-damping limit of the underdamped one
    strong = 200.0
    assert theory.escape_rate(g, damping=strong, form="kramers", **kw) == pytest.approx(
        theory.escape_rate(g, damping=strong, form="kramers", model="overdamped", **kw), rel=1e-4)
    with pytest.raises(ValueError, match="form"):
        theory.escape_rate(g, damping=1.0, form="eyring", **kw)
    with pytest.raises(ValueError, match="overdamped"):
        theory.escape_rate(g, damping=1.0, form="exact", **kw)


def test_fulton_dunkleberger_closed_forms():
    gamma_dot, g0 = 1e-3, 0.2
    g = np.linspace(g0, 0.9, 50)
    constant = theory.fulton_dunkleberger_cdf(g, gamma_dot=gamma_dot, rate=lambda x: 0.01, gamma_start=g0)
    np.testing.assert_allclose(constant, -np.expm1(-0.01 * (g - g0) / gamma_dot), rtol=1e-9, atol=1e-12)
    a, b = 1e-8, 20.0
    expo = theory.fulton_dunkleberger_cdf(g, gamma_dot=gamma_dot, rate=lambda x: a * math.exp(b * x), gamma_start=g0)
    exact = -np.expm1(-(a / (b * gamma_dot)) * (np.exp(b * g) - math.exp(b * g0)))
    np.testing.assert_allclose(expo, exact, rtol=1e-4, atol=1e-9)
    mean = theory.fulton_dunkleberger_mean(gamma_dot=gamma_dot, rate=lambda x: 0.05, gamma_start=g0)
    assert mean == pytest.approx(g0 + gamma_dot / 0.05, rel=1e-4)  # ends far below gamma_end = 1


def test_fulton_dunkleberger_is_one_where_no_barrier_is_left():
    # a sample can pass gamma = 1 before its particle is counted: the CDF there is 1, without the rates
    # of gamma >= 1 (where the formulas have no barrier, no well and no value)
    rate = functools.partial(theory.escape_rate, V0=1.0, damping=0.5, theta=0.05, form="melnikov")
    g = np.array([0.6, 0.9, 0.999, 1.0, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cdf = theory.fulton_dunkleberger_cdf(g, gamma_dot=1e-4, rate=rate, gamma_start=0.5)
    below = theory.fulton_dunkleberger_cdf(g[:3], gamma_dot=1e-4, rate=rate, gamma_start=0.5)
    np.testing.assert_array_equal(cdf[:3], below)  # the same rates below 1
    assert np.all(np.diff(cdf) >= 0) and cdf[3] == cdf[4] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rate is evaluated outside the ramp (gamma < -1 has none either)
        edge = theory.fulton_dunkleberger_cdf(np.array([-1e300, 0.4, np.nan, 1.5]), gamma_dot=1e-4, rate=rate,
                                              gamma_start=0.5)
    np.testing.assert_array_equal(edge, [0.0, 0.0, np.nan, 1.0])  # before the ramp, NaN, switched


def test_warm_start_gamma_has_the_requested_probability():
    kw = dict(V0=1.0, damping=1.0, theta=0.05)
    gamma_dot = 1e-4
    g = theory.warm_start_gamma(gamma_dot=gamma_dot, probability=1e-9, **kw)
    rate = functools.partial(theory.escape_rate, form="melnikov", **kw)
    p = theory.fulton_dunkleberger_cdf(np.array([g]), gamma_dot=gamma_dot, rate=rate, points=2000)[0]
    assert p == pytest.approx(1e-9, rel=0.02)
