"""Quantum escape theory: printed coefficients, independent quadratures and known limits."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special

from gpuensembles.models.josephson import junction, theory


def test_coefficients_are_those_printed_by_martinis_devoret_clarke_1987():
    # PRB 35, 4682 (1987), Sect. II: Gamma_q = a_q (omega_p / 2 pi) exp[-7.2 (Delta U / hbar omega_p)(1 + 0.87 / Q)],
    # a_q = [120 pi (7.2 Delta U / hbar omega_p)]^(1/2); the 0.87 is 45 zeta(3) / (2 pi^3) of Grabert, Olschowski
    # and Weiss (PRB 36, 1931 (1987)), computed here from scipy's zeta, not from the constant in the package.
    from gpuensembles.models.josephson import quantum_theory as q

    assert round(q.CUBIC_EXPONENT, 1) == 7.2
    assert round(45 * special.zeta(3) / (2 * math.pi**3), 2) == 0.87
    assert q.DAMPING_COEFFICIENT == pytest.approx(45 * special.zeta(3) / (2 * math.pi**3), rel=1e-15)
    gamma, V0 = 0.97, 150.0
    du, omega = theory.barrier(gamma, V0), theory.plasma_frequency(gamma, V0)
    expected = math.sqrt(120 * math.pi * 7.2 * du / omega) * omega / (2 * math.pi) * math.exp(-7.2 * du / omega)
    assert theory.mqt_rate(gamma, V0=V0, damping=0.0) == pytest.approx(expected, rel=1e-12)


def _bounce(gamma, V0):
    """``2 int sqrt(2 (U - U_min))`` by scipy's quad, the exit point by brentq."""
    U = lambda x: -V0 * (np.cos(x) + gamma * x)  # noqa: E731
    a, b = math.asin(gamma), math.pi - math.asin(gamma)
    exit_point = optimize.brentq(lambda x: U(x) - U(a), b, b + 2 * math.pi, xtol=1e-14)
    value, _ = integrate.quad(lambda x: math.sqrt(max(2 * (U(x) - U(a)), 0.0)), a, exit_point, limit=200,
                              epsabs=0, epsrel=1e-12)
    return 2 * value


@pytest.mark.parametrize("gamma", [0.3, 0.8, 0.95])
def test_wkb_exponent_against_scipy_quadrature(gamma):
    assert theory.wkb_exponent(gamma, 40.0) == pytest.approx(_bounce(gamma, 40.0), rel=1e-9)


def test_wkb_exponent_of_the_cosine_barrier_reaches_caldeira_leggett_36_over_5_near_critical_bias():
    for gamma in (0.99, 0.999):
        ratio = theory.wkb_exponent(gamma, 1.0) / (theory.barrier(gamma) / theory.plasma_frequency(gamma))
        assert ratio == pytest.approx(36 / 5, rel=1e-5)


def test_cubic_and_exact_conventions_agree_near_critical_bias_only():
    V0, damping = 1e6, 10.0
    near = [theory.mqt_rate(0.9999, V0=V0, damping=damping, barrier=b) for b in ("exact", "cubic")]
    assert near[0] == pytest.approx(near[1], rel=0.02)
    far = [theory.mqt_rate(0.9, V0=400.0, damping=1.0, barrier=b) for b in ("exact", "cubic")]
    assert abs(math.log(far[0] / far[1])) > 0.1


def test_damping_lowers_the_tunnelling_rate_by_the_first_order_exponent():
    gamma, V0, damping = 0.98, 300.0, 2.0
    du, omega = theory.barrier(gamma, V0), theory.plasma_frequency(gamma, V0)
    ratio = theory.mqt_rate(gamma, V0=V0, damping=damping) / theory.mqt_rate(gamma, V0=V0, damping=0.0)
    assert math.log(ratio) == pytest.approx(-7.2 * du / omega * 0.8723 * damping / omega, rel=1e-3)


def test_crossover_temperature_limits():
    gamma, V0 = 0.95, 200.0
    omega = theory.plasma_frequency(gamma, V0)
    assert theory.crossover_temperature(gamma, V0=V0, damping=0.0) == pytest.approx(omega / (2 * math.pi))
    lowered = theory.crossover_temperature(gamma, V0=V0, damping=omega)  # Q = 1: sqrt(5/4) - 1/2
    assert lowered == pytest.approx(omega / (2 * math.pi) * (math.sqrt(1.25) - 0.5), rel=1e-12)
    strong = theory.crossover_temperature(gamma, V0=V0, damping=1e4 * omega)  # omega_R -> omega^2 / damping
    assert strong == pytest.approx(omega / (2 * math.pi) / 1e4, rel=1e-6)


def test_quantum_enhancement_is_the_matsubara_product_and_diverges_at_the_crossover():
    gamma, V0, damping = 0.95, 200.0, 4.0
    omega = theory.plasma_frequency(gamma, V0)
    star = theory.crossover_temperature(gamma, V0=V0, damping=damping)
    theta = 1.5 * star
    nu = 2 * math.pi * np.arange(1, 2_000_001) * theta
    direct = np.exp(np.sum(np.log1p(2 * omega**2 / (nu * nu + nu * damping - omega**2))))
    assert theory.quantum_enhancement(gamma, V0=V0, damping=damping, theta=theta) == pytest.approx(direct, rel=1e-5)
    # high temperature: ln c_q -> sum 2 omega^2 / nu_n^2 = omega^2 / (12 theta^2), plus O(damping / theta^3)
    hot = 200 * star
    assert math.log(theory.quantum_enhancement(gamma, V0=V0, damping=0.0, theta=hot)) == pytest.approx(
        omega**2 / (12 * hot**2), rel=1e-3)
    near = [theory.quantum_enhancement(gamma, V0=V0, damping=damping, theta=f * star) for f in (1.01, 1.001)]
    assert near[1] > 5 * near[0] > 5
    with pytest.raises(ValueError, match="crossover"):
        theory.quantum_enhancement(gamma, V0=V0, damping=damping, theta=0.99 * star)


def test_quantum_thermal_rate_is_the_classical_rate_times_the_enhancement():
    gamma, V0, damping, theta = 0.9, 200.0, 1.0, 3.0
    rate = theory.quantum_thermal_rate(gamma, V0=V0, damping=damping, theta=theta)
    classical = theory.escape_rate(gamma, V0=V0, damping=damping, theta=theta, form="melnikov")
    assert rate == pytest.approx(classical * theory.quantum_enhancement(gamma, V0=V0, damping=damping, theta=theta))


def test_escape_theta_inverts_the_transition_state_rate():
    gammas = np.array([0.5, 0.8, 0.95])
    rates = [theory.escape_rate(g, V0=100.0, damping=1.0, theta=2.5, form="tst") for g in gammas]
    np.testing.assert_allclose(theory.escape_theta(rates, gammas, V0=100.0), 2.5, rtol=1e-12)


def test_escape_temperature_in_kelvin_matches_normalized_units():
    R, C, Ic, T = 250.0, 88e-15, 0.748e-6, 0.3  # the Li et al. (2007) junction, colder
    n = junction.normalize(R=R, C=C, Ic=Ic, T=T)
    V0, theta, t0 = float(n["V0"]), float(n["theta"]), float(n["time_unit"])
    gamma = 0.93
    rate = theory.escape_rate(gamma, V0=V0, damping=1.0, theta=theta, form="tst") / t0  # 1/s
    assert theory.escape_temperature(rate, gamma * Ic, Ic=Ic, C=C) == pytest.approx(T, rel=1e-9)


def test_below_the_crossover_the_escape_temperature_of_tunnelling_is_about_hbar_omega_over_7_2():
    gamma, V0, damping = 0.9, 5e4, 2.0  # Delta U / omega_p = 20, Q = 33
    omega = theory.plasma_frequency(gamma, V0)
    Q = omega / damping
    theta_q = theory.escape_theta(theory.mqt_rate(gamma, V0=V0, damping=damping), gamma, V0=V0)
    # exact up to the log of the prefactor a_q over the exponent: a few percent at Delta U / omega ~ 20
    assert float(theta_q) == pytest.approx(omega / (7.2 * (1 + 0.87 / Q)), rel=0.1)
    assert float(theta_q) < theory.crossover_temperature(gamma, V0=V0, damping=damping)


@pytest.mark.parametrize("call", [
    lambda: theory.mqt_rate(1.0, V0=1.0, damping=0.0),
    lambda: theory.mqt_rate(0.5, V0=-1.0, damping=0.0),
    lambda: theory.mqt_rate(0.5, V0=1.0, damping=-1.0),
    lambda: theory.mqt_rate(0.5, V0=1.0, damping=0.0, barrier="quartic"),
    lambda: theory.wkb_exponent(0.0, 1.0),
    lambda: theory.escape_theta(0.0, 0.5, V0=1.0),
    lambda: theory.escape_temperature(1.0, 1e-6, Ic=0.0, C=1e-12),
])
def test_bad_input_names_the_parameter(call):
    with pytest.raises(ValueError, match="gamma|V0|damping|barrier|rate|Ic"):
        call()
