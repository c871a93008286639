"""Escape rates against the exact overdamped rate, for any chunking, and bad input refused by name.

The overdamped rate is compared with the exact ``1 / MFPT`` from the thermal state of the well
to the next well's bottom (:func:`theory.overdamped_mfpt` with ``thermal=True``), within
4 standard errors plus the time-step bias bound ``2 h kappa / damping`` (relative), where
``kappa = V0 cos(arcsin(gamma))`` is the curvature at the well bottom: the Euler chain's
stationary density differs from Boltzmann's by ``exp(h (U'^2 / 4 theta - U'' / 2) / damping)``
to first order, which changes the ratio of barrier-top to well populations by ``h kappa / damping``.
"""

import math

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.models.josephson import theory

CPU = dict(backend="cpu", progress=False)
GAMMA, V0, DAMPING = 0.5, 1.0, 1.0
NEXT_WELL = math.asin(GAMMA) + 2 * math.pi
KAPPA = V0 * math.cos(math.asin(GAMMA))


def _exact(D):
    return 1.0 / theory.overdamped_mfpt(V0=V0, damping=DAMPING, gamma=GAMMA, D=D, b=NEXT_WELL, thermal=True)


def _assert_rate(rate, stderr, exact, h):
    bias = 2.0 * h * KAPPA / DAMPING * exact
    assert abs(rate - exact) <= 4.0 * stderr + bias, (rate, stderr, exact)


def test_ffs_matches_the_exact_overdamped_rate_over_eight_decades():
    barriers = np.array([5.0, 10.0, 20.0])
    D = float(theory.barrier(GAMMA, V0)) / barriers
    h = 0.02
    ds = ge.escape_rates(model="overdamped", damping=DAMPING, gamma=GAMMA, D=D, h=h, method="ffs", rel_error=0.1,
                         seed=3, **CPU)
    assert ds.rate.dims == ("D",)
    np.testing.assert_allclose(ds.barrier, barriers)
    for i, d in enumerate(D):
        point = ds.isel(D=i)
        assert float(point.rate_stderr) <= 0.2 * float(point.rate)  # the target 0.1, met within its own noise
        _assert_rate(float(point.rate), float(point.rate_stderr), _exact(d), h)
    assert float(ds.rate[-1]) < 1e-8  # the 20-theta point is eight decades below the flux through the well
    assert (ds.method == "ffs").all() and (ds.interfaces > 2).all() and (ds.steps > 0).all()


def test_direct_matches_the_exact_overdamped_rate_at_a_low_barrier():
    D = float(theory.barrier(GAMMA, V0)) / 2.0
    h = 0.01
    ds = ge.escape_rates(model="overdamped", damping=DAMPING, gamma=GAMMA, D=D, h=h, rel_error=0.05, seed=4, **CPU)
    assert str(ds.method.values) == "direct" and int(ds.interfaces) == 0
    assert int(ds.replicas) == math.ceil(1.2 / 0.05**2)
    _assert_rate(float(ds.rate), float(ds.rate_stderr), _exact(D), h)


def test_same_seed_same_rates_for_any_chunking():
    kwargs = dict(model="overdamped", damping=DAMPING, gamma=[0.3, 0.45, 0.6], D=[0.08, 0.1], h=0.05, rel_error=0.3,
                  seed=9, **CPU)
    eager = ge.escape_rates(**kwargs)
    assert eager.rate.dims == ("gamma", "D")
    for chunks in (1, {"gamma": 2}, {"D": 1, "gamma": 3}):
        lazy = ge.escape_rates(**kwargs, chunks=chunks)
        assert not isinstance(lazy.rate.data, np.ndarray)
        xr.testing.assert_identical(eager.drop_attrs(), lazy.compute().drop_attrs())
    other = ge.escape_rates(**{**kwargs, "seed": 10})
    assert not np.array_equal(eager.rate.values, other.rate.values)


def test_physical_units_give_rates_per_second():
    li = dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2)
    units = ge.josephson.normalize(**li)
    ds = ge.escape_rates(physical=li, gamma=0.97, h=2e-3, integrator="baoab", rel_error=0.3, seed=2, **CPU)
    np.testing.assert_allclose(ds.rate_per_second, ds.rate / float(units["time_unit"]))
    assert ds.rate_per_second.attrs["units"] == "s-1"


@pytest.mark.parametrize(("kwargs", "named"), [
    (dict(gamma=1.0), "gamma"),
    (dict(gamma=-0.1), "gamma"),
    (dict(gamma=0.5, D=0.005, method="direct"), "direct"),
    (dict(gamma=0.9, D=0.2, method="ffs"), "method='direct'"),
    (dict(gamma=0.1, D=0.01), "largest barrier"),
    (dict(gamma=0.5, rel_error=0.0), "rel_error"),
    (dict(gamma=0.5, method="kramers"), "method"),
    (dict(gamma=0.5, h=1.0), "h"),
])
def test_bad_input_is_refused_by_name(kwargs, named):
    base = dict(model="overdamped", damping=1.0, D=0.05, h=0.01, seed=1, **CPU)
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        ge.escape_rates(**{**base, **kwargs})


def test_physical_and_normalized_forms_do_not_mix():
    with pytest.raises(ValueError, match="physical"):
        ge.escape_rates(physical=dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2), damping=1.0, gamma=0.9, h=1e-3)
    with pytest.raises(ValueError, match="physical"):
        ge.escape_rates(physical=dict(R=250.0, C=88e-15, Ic=0.748e-6), gamma=0.9, h=1e-3)


@pytest.mark.parametrize("damping", [0.05, 0.5])
def test_underdamped_ffs_agrees_with_direct(damping):
    # the underdamped coordinate is the energy in the well and the phase past the top; both
    # methods must count the same passage (the next well's bottom)
    barrier = 5.0
    D = damping * float(theory.barrier(GAMMA, V0)) / barrier
    kw = dict(damping=damping, gamma=GAMMA, D=D, h=0.02, integrator="baoab", seed=5, **CPU)
    ffs = ge.escape_rates(**kw, method="ffs", rel_error=0.15)
    direct = ge.escape_rates(**kw, method="direct", rel_error=0.15)
    combined = math.hypot(float(ffs.rate_stderr), float(direct.rate_stderr))
    assert abs(float(ffs.rate) - float(direct.rate)) <= 4 * combined
