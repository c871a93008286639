"""Langevin ensembles (Stewart-McCumber, SRK2) on the CPU backend, against exact results."""

import warnings

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.models.langevin import theory

from .. import raise_if_dask_computes, z_score

CPU = dict(backend="cpu", progress=False)


def test_equipartition_with_the_potential():
    # f = a = 0: the stationary state is Boltzmann, so <v^2> = kT whatever V0 is
    ds = ge.langevin(kT=[0.2, 0.5], g=1.0, h=0.01, steps=3000, realizations=3000, start="uniform", seed=3, **CPU)
    kin = ds.langevin.kinetic()
    assert np.all(np.abs(z_score(kin["mean"], kin["stderr"], ds.kT)) < 4)


def test_free_particle_drift_and_spreading():
    g, kT, f, h, steps, transient = 2.0, 0.4, 0.3, 0.01, 2000, 500
    ds = ge.langevin(V0=0.0, g=g, kT=kT, f=f, h=h, steps=steps, transient=transient, realizations=4000, seed=5,
                     **CPU)

    def mean_x(t):  # from rest: v(t) = (f / g)(1 - exp(-g t))
        return f / g * (t - (1 - np.exp(-g * t)) / g)

    T, t0 = steps * h, transient * h
    vel = ds.langevin.velocity()
    assert abs(z_score(vel["mean"], vel["stderr"], (mean_x(T) - mean_x(t0)) / (T - t0))) < 4
    # exact variance from rest; -> 2 (kT / g) t at long times
    var = 2 * kT / g * (T - 2 * (1 - np.exp(-g * T)) / g + (1 - np.exp(-2 * g * T)) / (2 * g))
    pos = ds.langevin.position()
    assert abs(z_score(pos["variance"], pos["variance_stderr"], var)) < 4
    assert abs(z_score(pos["mean"], pos["mean_stderr"], mean_x(T))) < 4


@pytest.mark.parametrize("integrator", ["srk2", "euler"])
def test_overdamped_drift_matches_stratonovich(integrator):
    f, kT, V0, g = 2.0, 0.1, 0.5, 1.0
    h = 0.002 if integrator == "srk2" else 0.0005
    ds = ge.langevin(model="overdamped", integrator=integrator, f=f, kT=kT, V0=V0, g=g, h=h,
                     steps=int(60 / h), transient=int(5 / h), realizations=1000, seed=7, **CPU)
    vel = ds.langevin.velocity()
    exact = theory.tilted_periodic_drift(f=f, kT=kT, g=g, V0=V0)
    assert abs(z_score(vel["mean"], vel["stderr"], exact)) < 4


def test_the_drift_test_can_fail():
    # the same check against a drift 5 % off must fail: the tolerance is tight enough
    ds = ge.langevin(model="overdamped", f=2.0, kT=0.1, V0=0.5, h=0.002, steps=30_000, transient=2500,
                     realizations=1000, seed=7, **CPU)
    vel = ds.langevin.velocity()
    exact = theory.tilted_periodic_drift(f=2.0, kT=0.1, g=1.0, V0=0.5)
    assert abs(z_score(vel["mean"], vel["stderr"], 1.05 * exact)) > 4


def test_deterministic_limit_runs_over_the_washboard():
    # kT = 0, f > 2 pi V0: x' = f - 2 pi V0 cos(2 pi x) has the running solution of speed
    # sqrt(f^2 - (2 pi V0)^2) (time average); no noise, so every realization is the same
    f, V0 = 5.0, 0.5
    ds = ge.langevin(model="overdamped", f=f, V0=V0, kT=0.0, h=0.001, steps=100_000, transient=10_000,
                     realizations=2, seed=1, dtype="float64", **CPU)
    exact = np.sqrt(f**2 - (2 * np.pi * V0) ** 2)
    np.testing.assert_allclose(ds.mean_velocity, exact, rtol=2e-3)  # one period of phase error over the average


def test_sweep_dimensions_samples_and_histogram():
    a = [0.0, 1.0, 2.0]
    ds = ge.langevin(a=a, w=xr.DataArray([1.0, 2.0], dims="w"), kT=0.1, h=0.01, steps=400, sample_every=100,
                     histogram=(-3, 3), realizations=50, seed=2, **CPU)
    assert ds.x.dims == ("a", "w", "realization", "time")
    assert ds.time.values.tolist() == pytest.approx([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ds.x.isel(time=-1), ds.x_end)
    assert ds.density.dims == ("a", "w", "time", "cell")
    total = ds.density.sum("cell") + ds.density_below + ds.density_above
    assert np.all(total == 50)
    counts = np.floor(ds.x.isel(time=1)).astype(int)
    for cell in range(-3, 3):
        np.testing.assert_array_equal(ds.density.isel(time=1).sel(cell=cell), (counts == cell).sum("realization"))
    np.testing.assert_allclose(ds.langevin.density().sum("cell"), 1.0 - (ds.density_below + ds.density_above) / 50)


def test_record_only_what_is_asked():
    ds = ge.langevin(h=0.01, steps=100, sample_every=10, record=("v",), realizations=4, seed=1, **CPU)
    assert "v" in ds and "x" not in ds
    ds = ge.langevin(h=0.01, steps=100, sample_every=10, record=(), histogram=(0, 2), realizations=4, seed=1, **CPU)
    assert "v" not in ds and "x" not in ds and "density" in ds


def test_same_seed_same_numbers_for_any_chunking():
    kw = dict(a=[0.5, 1.5], kT=0.2, h=0.01, steps=300, sample_every=100, histogram=(-2, 2), realizations=23,
              seed=9, start="uniform", **CPU)
    eager = ge.langevin(**kw)
    with raise_if_dask_computes():
        lazy = ge.langevin(chunks=5, **kw)
    assert lazy.x.chunks is not None
    xr.testing.assert_identical(eager.drop_attrs(), lazy.compute().drop_attrs())
    # a slice of realizations is the same trajectories as in the full run
    part = ge.langevin(**{**kw, "realizations": 7})
    xr.testing.assert_identical(part.x_end, eager.x_end.isel(realization=slice(0, 7)))


@pytest.mark.parametrize("model, integrator",
                         [("underdamped", "srk2"), ("overdamped", "srk2"), ("underdamped", "euler")])
def test_sampling_does_not_change_the_trajectories(model, integrator):
    # segments of 3, 5 or 7 steps cut the four-step blocks of normals and drive phases anywhere
    kw = dict(a=[0.0, 4.2], w=4.9, g=0.9, f=0.1, kT=0.05, h=0.001, steps=4830, realizations=8, seed=2,
              model=model, integrator=integrator, backend="cpu", progress=False)
    whole = ge.langevin(**kw)
    for every in (3, 5, 7, 690):
        sampled = ge.langevin(sample_every=every, **kw)
        np.testing.assert_array_equal(sampled.x_end, whole.x_end)
        if model == "underdamped":
            np.testing.assert_array_equal(sampled.v_end, whole.v_end)
        np.testing.assert_array_equal(sampled.x.isel(time=-1), whole.x_end)


def test_netcdf_round_trip(tmp_path):
    ds = ge.langevin(a=[0.0, 1.0], h=0.01, steps=100, sample_every=50, histogram=(-1, 1), realizations=3, seed=4,
                     **CPU)
    ds.to_netcdf(tmp_path / "l.nc")
    xr.testing.assert_identical(ge.open_dataset(tmp_path / "l.nc").load(), ds)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(g=0.0), "g must lie in"),
        (dict(kT=-1.0), "kT must lie in"),
        (dict(V0=-1.0), "V0 must lie in"),
        (dict(h=0.5), "h is too large"),
        (dict(h=0.01, model="overdamped", g=0.1), "h is too large"),
        (dict(steps=0), "steps must be"),
        (dict(sample_every=7), "multiple of sample_every"),
        (dict(transient=100), "transient must be smaller"),
        (dict(transient=15, sample_every=10), "transient \\(15\\) must be a multiple"),
        (dict(record=("x",)), "needs sample_every"),
        (dict(sample_every=10, record=("y",)), "record may contain"),
        (dict(sample_every=10, record=("v",), model="overdamped"), "record may contain"),
        (dict(histogram=(2, 2)), "histogram must be"),
        (dict(histogram=(0.5, 2)), "histogram must be"),
        (dict(integrator="rk4"), "integrator must be one of"),
        (dict(start="hot"), "start must be one of"),
        (dict(a=[1.0, np.nan]), "a must be finite"),
        (dict(realizations=0), "realizations must be"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, message):
    kw = dict(h=0.01, steps=100, realizations=2, seed=1, **CPU)
    with pytest.raises(ValueError, match=message):
        ge.langevin(**{**kw, **kwargs})


def test_velocity_warns_while_trajectories_still_relax_after_the_transient():
    # V0 = 0 from rest: v(t) = (f / g)(1 - exp(-g t)) relaxes over 1 / g = 20 time units; with no
    # transient the first third of 60 time units is still relaxing, after a transient of 100 it is not
    kw = dict(V0=0.0, g=0.05, kT=0.01, f=0.05, h=0.05, sample_every=40, realizations=8, seed=9, **CPU)
    relaxing = ge.langevin(steps=1200, transient=0, **kw)
    check = relaxing.langevin.equilibration()
    assert bool(check["drifting"].all()) and check.attrs["scale"] == "across chains"
    with pytest.warns(RuntimeWarning, match=r"8 trajectories still drifting after the transient of 0 steps"):
        relaxing.langevin.velocity()
    settled = ge.langevin(steps=3200, transient=2000, **kw)
    assert not bool(settled.langevin.equilibration()["drifting"].any())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        settled.langevin.velocity()
    with pytest.raises(ValueError, match="needs the positions over time"):
        ge.langevin(steps=400, transient=0, **{**kw, "sample_every": None}).langevin.equilibration()
