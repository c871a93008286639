"""Exact 2D Ising references against enumeration, finite differences, Onsager's limit and series."""

import functools
import math
import warnings

import numpy as np
import pytest

from gpuensembles.models.ising import theory

BC = theory.ISING_BETA_C
#: polygon counts per site of the square lattice: ln Z/N = ln 2 + 2 ln cosh K + sum_n a_n tanh(K)^(2n + 4) at high T
#: and, by Kramers-Wannier duality, 2K + sum_n a_n exp(-2K)^(2n + 4) at low T (Domb, Adv. Phys. 9, 149 (1960))
POLYGONS = (1.0, 2.0, 4.5, 12.0)


@functools.cache
def _levels(L):
    """Distinct energies of the periodic L x L lattice and their degeneracies, by enumeration."""
    N = L * L
    spins = (((np.arange(2**N)[:, None] >> np.arange(N)) & 1) * 2 - 1).reshape(-1, L, L)
    # bonds to the right and lower neighbours: 2N of them, each pair twice for L = 2
    energy = -np.sum(spins * np.roll(spins, 1, axis=1) + spins * np.roll(spins, 1, axis=2), axis=(1, 2))
    return np.unique(energy, return_counts=True)


def _brute_force(L, beta):
    energy, count = _levels(L)
    log_w = np.log(count) - beta * energy
    w = np.exp(log_w - log_w.max())
    mean = np.sum(w * energy) / np.sum(w)
    var = np.sum(w * (energy - mean) ** 2) / np.sum(w)
    N = L * L
    return log_w.max() + np.log(np.sum(w)), mean / N, beta**2 * var / N


@pytest.mark.parametrize("L", [2, 4])
def test_enumeration(L):
    betas = np.array([0.0, 0.2, 0.3, BC, np.nextafter(BC, 0), np.nextafter(BC, 1), 0.5, 1.0])
    expected = np.array([_brute_force(L, b) for b in betas])
    energy, heat = theory.ising_exact(L, betas)
    np.testing.assert_allclose(theory.ising_log_partition(L, betas), expected[:, 0], rtol=1e-10)
    np.testing.assert_allclose(energy, expected[:, 1], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(heat, expected[:, 2], rtol=1e-10, atol=1e-14)
    assert theory.ising_log_partition(L, 0.0) == L * L * math.log(2.0)
    assert theory.ising_exact(L, 0.0) == (0.0, 0.0)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_enumeration_at_extreme_beta_without_warnings(L):
    # Kaufman's products cancel at small beta (relative error ~1e-16 / beta^2, ~1e-8 at the switch to the
    # high-temperature expansion at 1e-4) and overflow above ~355 (the ground state from 20 on); the heat
    # near the ground state is roundoff of ~1e-29 on a value of ~1e-66; enumeration itself loses
    # ~1e-16 / beta at small beta
    betas = np.array([1e-6, 9.9e-5, 1.01e-4, 1e-3, 19.9, 20.1, 300.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        energy, heat = theory.ising_exact(L, betas)
        log_z = theory.ising_log_partition(L, betas)
        hot, frozen = theory.ising_exact(L, 1e-300), theory.ising_exact(L, 1e300)
    expected = np.array([_brute_force(L, b) for b in betas])
    np.testing.assert_allclose(log_z, expected[:, 0], rtol=1e-12)
    np.testing.assert_allclose(energy, expected[:, 1], rtol=3e-8)
    np.testing.assert_allclose(heat, expected[:, 2], rtol=3e-8, atol=1e-27)
    assert hot[0] == pytest.approx(-2.0 * math.tanh((2.0 if L == 2 else 1.0) * 1e-300), rel=1e-12)
    assert frozen == (-2.0, 0.0)


@pytest.mark.parametrize("L", [8, 32])
def test_analytic_derivatives_match_finite_differences(L):
    betas, h, N = np.array([0.2, 0.4, BC, 0.45, 0.7]), 5e-4, L * L
    f = [theory.ising_log_partition(L, betas + j * h) for j in (-2, -1, 0, 1, 2)]
    d1 = (f[0] - 8 * f[1] + 8 * f[3] - f[4]) / (12 * h)  # O(h^4) stencils
    d2 = (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)
    energy, heat = theory.ising_exact(L, betas)
    np.testing.assert_allclose(energy, -d1 / N, rtol=1e-6)
    np.testing.assert_allclose(heat, betas**2 * d2 / N, rtol=1e-6)


def test_continuous_through_beta_c():
    # exactly at beta_c, Z4 = 0 and its log-derivative is infinite; the neighbours go through the other branch
    betas = BC * (1.0 + np.array([-1e-13, 0.0, 1e-13]))
    for L in (2, 16, 1024):
        energy, heat = theory.ising_exact(L, betas)
        np.testing.assert_allclose(energy, energy[1], rtol=1e-11)
        np.testing.assert_allclose(heat, heat[1], rtol=1e-9)


def test_large_lattice_converges_to_onsager():
    # The torus corrections fall as exp(-L / xi) with 1/xi = |gamma_0| = |2K + ln tanh K| (interface tension
    # below T_c); L |gamma_0| > 75 here, so exp(-75) ~ 3e-33 and only rounding is left.
    L, betas = 512, np.array([0.1, 0.2, 0.3, 0.4, 0.48, 0.6, 1.0, 2.0])
    assert np.all(L * np.abs(2 * betas + np.log(np.tanh(betas))) > 75)
    energy, heat = theory.ising_exact(L, betas)
    np.testing.assert_allclose(energy, theory.onsager_energy(betas), rtol=1e-12)
    np.testing.assert_allclose(heat, theory.onsager_specific_heat(betas), rtol=1e-10)


def test_critical_finite_size_scaling():
    # Ferdinand & Fisher (1969): u_L(beta_c) + sqrt 2 ~ 1/L and c_L(beta_c) ~ (8/pi) K_c^2 ln L
    sizes = np.array([256, 512, 1024])
    energy, heat = np.array([theory.ising_exact(L, BC) for L in sizes]).T
    deviation = energy + math.sqrt(2.0)
    np.testing.assert_allclose(deviation[:-1] / deviation[1:], 2.0, rtol=1e-3)
    np.testing.assert_allclose(np.diff(heat), 8 / math.pi * BC**2 * math.log(2.0), rtol=2e-3)


def test_log_partition_extreme_arguments():
    L, N = 1024, 1024**2
    assert theory.ising_log_partition(L, 3.0) == pytest.approx(math.log(2.0) + 2 * N * 3.0 + N * math.exp(-24.0),
                                                               rel=0, abs=1e-6)
    t = math.tanh(1e-3)
    assert theory.ising_log_partition(L, 1e-3) == pytest.approx(N * (math.log(2.0) + 2 * math.log(math.cosh(1e-3))
                                                                     + t**4), rel=1e-14)
    energy, heat = theory.ising_exact(L, np.array([1e-3, 3.0, 10.0]))
    assert np.all(np.isfinite(energy)) and np.all(np.isfinite(heat))


def test_onsager_at_and_near_beta_c():
    assert BC == pytest.approx(0.44068679350977147, rel=1e-15)
    assert math.sinh(2 * BC) == pytest.approx(1.0, rel=1e-15)
    assert theory.onsager_energy(BC) == pytest.approx(-math.sqrt(2.0), rel=1e-15)
    np.testing.assert_allclose(theory.onsager_energy(BC * (1 + np.array([-1e-9, 1e-9]))), -math.sqrt(2.0), rtol=1e-7)
    assert theory.onsager_specific_heat(BC) == math.inf
    # c ~ -(8/pi) K_c^2 ln|1 - beta/beta_c| on both sides
    for side in (-1, 1):
        near, far = theory.onsager_specific_heat(BC * (1 + side * np.array([1e-6, 1e-5])))
        step = near - far
        assert step == pytest.approx(8 / math.pi * BC**2 * math.log(10.0), rel=1e-4)


def test_onsager_specific_heat_is_the_energy_derivative():
    betas, h = np.array([0.1, 0.3, 0.42, 0.46, 0.6, 1.0]), 1e-5
    u = [theory.onsager_energy(betas + j * h) for j in (-2, -1, 1, 2)]
    du = (u[0] - 8 * u[1] + 8 * u[2] - u[3]) / (12 * h)
    np.testing.assert_allclose(theory.onsager_specific_heat(betas), -betas**2 * du, rtol=1e-8)
    assert theory.onsager_energy(0.0) == 0.0 and theory.onsager_specific_heat(0.0) == 0.0


@pytest.mark.parametrize("K", [0.1, 0.15, 0.2])
def test_onsager_high_temperature_series(K):
    t = math.tanh(K)
    series = -2 * t - (1 - t * t) * sum((2 * n + 4) * a * t ** (2 * n + 3) for n, a in enumerate(POLYGONS))
    assert abs(theory.onsager_energy(K) - series) < 600 * t**11  # next term: -(112/3) * 12 t^11


@pytest.mark.parametrize("K", [0.8, 1.0, 1.5])
def test_onsager_low_temperature_series(K):
    z = math.exp(-2 * K)
    series = -2 + 2 * sum((2 * n + 4) * a * z ** (2 * n + 4) for n, a in enumerate(POLYGONS))
    assert abs(theory.onsager_energy(K) - series) < 1200 * z**12  # next term: 2 (112/3) 12 z^12


def test_magnetization():
    below = np.array([0.0, 0.2, 0.4, BC])
    assert np.all(theory.onsager_magnetization(below) == 0.0)
    above = np.array([BC * (1 + 1e-9), 0.45, 0.5, 0.7, 1.0, 2.0, 5.0])
    m = theory.onsager_magnetization(above)
    assert np.all(m > 0) and np.all(np.diff(m) > 0) and m[-1] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(m**8, 1 - np.sinh(2 * above) ** -4.0, rtol=1e-12)
    K = 2.0  # m = 1 - 2 exp(-8K) [1 + O(exp(-4K))]
    assert 1 - theory.onsager_magnetization(K) == pytest.approx(2 * math.exp(-8 * K), rel=5 * math.exp(-4 * K))


def test_shapes_and_types():
    betas = np.full((2, 3), 0.3)
    energy, heat = theory.ising_exact(4, betas)
    assert energy.shape == heat.shape == theory.ising_log_partition(4, betas).shape == (2, 3)
    assert theory.onsager_energy(betas).shape == theory.onsager_magnetization(betas).shape == (2, 3)
    assert all(type(x) is float for x in (*theory.ising_exact(np.int64(4), 0.3), theory.ising_log_partition(4, 0.3),
                                          theory.onsager_energy(0.3), theory.onsager_specific_heat(0.3),
                                          theory.onsager_magnetization(0.3)))


@pytest.mark.parametrize("L", [1, 0, -4, 2.5, 4.0, "4", None])
def test_bad_L(L):
    with pytest.raises(ValueError, match="L must"):
        theory.ising_exact(L, 0.3)
    with pytest.raises(ValueError, match="L must"):
        theory.ising_log_partition(L, 0.3)


@pytest.mark.parametrize("beta", [-0.1, np.nan, np.inf, [0.2, -1.0]])
def test_bad_beta(beta):
    for call in (functools.partial(theory.ising_exact, 4), functools.partial(theory.ising_log_partition, 4),
                 theory.onsager_energy, theory.onsager_specific_heat, theory.onsager_magnetization):
        with pytest.raises(ValueError, match="beta must"):
            call(beta)
