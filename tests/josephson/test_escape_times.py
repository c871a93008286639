"""Escape times against exact and asymptotic theory (CPU backend, CI-sized).

Tolerances: 4 standard errors of the simulated mean, plus -- where the Euler scheme has
a known bias -- that bias computed from theory, never a hand-tuned constant.
"""

import math

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.josephson import theory

from .. import z_score

# h = 2e-3: the discrete-monitoring bias (computed below) is about half of 4 standard errors
OVERDAMPED = dict(V0=1.0, damping=1.0, gamma=0.5, h=2e-3, model="overdamped")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_overdamped_mean_escape_time_matches_exact_mfpt(dtype):
    D = np.array([0.3, 0.4])
    ds = ge.escape_times(**OVERDAMPED, D=D, realizations=8000, seed=2, dtype=dtype, backend="cpu")
    stats = ds.fpt.mean()
    for d in D:
        m, se = (float(stats[v].sel(D=d)) for v in ("mean", "stderr"))
        kw = dict(V0=1.0, damping=1.0, gamma=0.5, D=d)
        exact = theory.overdamped_mfpt(**kw)
        # Checking phi > b once per step detects crossings late: to leading order the
        # barrier sits BGK_BETA * sigma * sqrt(h) further out (an O(sqrt h) bias).
        shifted = theory.overdamped_mfpt(**kw, b=theory.barrier_top(0.5) + theory.discrete_monitoring_shift(
            D=d, damping=1.0, h=OVERDAMPED["h"]))
        bias = shifted - exact
        assert 0 < bias < 4 * se  # the test resolves the physics, not the bias
        assert abs(m - exact) < 4 * se + bias, (d, m, se, exact, bias)


@pytest.mark.slow
def test_moderate_damping_arrhenius_slope_is_damping_times_barrier():
    # Kramers' moderate-to-strong damping regime: the prefactor does not depend on the
    # temperature, so ln<T> = a + damping * Delta U / D up to O(theta / Delta U).
    # h * omega_p**2 / damping = 0.009 keeps Euler's numerical heating below 1%.
    damping, gamma = 1.0, 0.5
    barrier = float(theory.barrier(gamma))
    D = damping * barrier / np.array([3.0, 3.75, 4.5, 5.25, 6.0])
    ds = ge.escape_times(damping=damping, gamma=gamma, D=D, h=0.01, realizations=1200, seed=5, backend="cpu")
    fit = ds.fpt.kramers_fit(dim="D", form="arrhenius")
    assert abs(z_score(float(fit.slope), float(fit.slope_stderr), damping * barrier)) < 4
    assert float(fit.chi2) < fit.dof.item() + 4 * math.sqrt(2 * fit.dof.item())  # the form fits the data


def test_step_limit_semantics():
    kw = dict(damping=0.05, gamma=0.5, D=0.02, h=0.004, realizations=16, seed=1, backend="cpu")
    free = ge.escape_times(**kw)
    assert free.escaped.all()
    first = int(free.steps.min())
    for max_steps in (1, 2, 3, 5, first - 1, first, first + 1):
        ds = ge.escape_times(**kw, max_steps=max_steps)
        hit = free.steps <= max_steps
        np.testing.assert_array_equal(ds.escaped.values, hit.values)
        np.testing.assert_array_equal(ds.steps.values, np.minimum(free.steps.values, max_steps))
        assert np.isnan(ds.escape_time.where(~ds.escaped)).all()
    assert ds.fpt.mean()["mean"].isnull().all() == (not bool(ds.escaped.all()))


def test_escape_time_is_steps_times_h_in_float64():
    ds = ge.escape_times(damping=0.05, gamma=0.5, D=[0.02, 0.03], h=0.004, realizations=8, seed=3, backend="cpu")
    np.testing.assert_array_equal(ds.escape_time.values, ds.steps.values * 0.004)
    assert ds.escape_time.dtype == np.float64 and ds.steps.dtype == np.int64


@pytest.mark.slow
def test_float32_and_float64_agree_statistically():
    # different seeds: with one seed the two runs share their noise and would agree trivially
    kw = dict(damping=0.05, gamma=0.5, D=0.02, h=0.004, realizations=4000, backend="cpu")
    a = ge.escape_times(**kw, dtype="float32", seed=9).fpt.mean()
    b = ge.escape_times(**kw, dtype="float64", seed=10).fpt.mean()
    assert abs(z_score(float(a["mean"]), float(a["stderr"]), float(b["mean"]), float(b["stderr"]))) < 4


@pytest.mark.slow
def test_baoab_at_ten_times_the_step_matches_fine_euler():
    # damping 0.2, h omega_p^2 / damping = 10% at h = 0.023: Euler's numerical heating would
    # speed escapes up visibly; BAOAB has no first-order heating.
    kw = dict(damping=0.2, gamma=0.5, D=0.2 * float(theory.barrier(0.5)) / 5, passage="next_well",
              realizations=1000, backend="cpu")
    fine = ge.escape_times(**kw, h=0.0023, seed=11).fpt.mean()  # 10x the steps: most of the test's time
    baoab = ge.escape_times(**kw, h=0.023, integrator="baoab", seed=12).fpt.mean()
    coarse = ge.escape_times(**kw, h=0.023, seed=13).fpt.mean()
    mean_se = lambda stats: (float(stats["mean"]), float(stats["stderr"]))  # noqa: E731
    print(f"\nfine Euler {mean_se(fine)}, BAOAB x10 {mean_se(baoab)}, Euler x10 {mean_se(coarse)}")
    assert abs(z_score(*mean_se(baoab), *mean_se(fine))) < 4
    assert z_score(*mean_se(coarse), *mean_se(fine)) < -4  # the heating the test guards against is resolved
