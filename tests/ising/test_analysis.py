"""The ``.ising`` analysis on synthetic binned data with known answers (no simulation needed)."""

import math
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from scipy.signal import lfilter

from gpuensembles.models.ising import analysis as ising
from gpuensembles.models.ising import theory

from .. import raise_if_dask_computes, z_score

LS = (4, 8)
BETAS = (0.3, 0.4, 0.5)
VARIABLES = ("bin_e", "bin_e2", "bin_abs_m", "bin_m2", "bin_m4", "bin_acceptance")


def binned(x, counts):
    """Means of consecutive groups of ``counts`` measurements along the last axis."""
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return np.add.reduceat(x, starts, axis=-1) / np.asarray(counts)


def dataset(e, m, acc, counts, Ls=LS, betas=BETAS, measure_every=1):
    """An ``ising``-like Dataset from per-measurement series over (L, beta, realization, measurement)."""
    dims = ("L", "beta", "realization", "bin")
    data = {"bin_e": e, "bin_e2": e**2, "bin_abs_m": np.abs(m), "bin_m2": m**2, "bin_m4": m**4, "bin_acceptance": acc}
    return xr.Dataset(
        {name: (dims, binned(x, counts)) for name, x in data.items()},
        coords={"L": ("L", np.asarray(Ls)), "beta": ("beta", np.asarray(betas, dtype=float)),
                "realization": np.arange(e.shape[2]),
                "bin_measurements": ("bin", np.asarray(counts, dtype=np.int64))},
        attrs={"measure_every": measure_every},
    )


def gaussian_case(R=8, B=32, n_b=32, counts=None, seed=0):
    """Independent Gaussian ``e`` and ``m`` per measurement with known moments; returns (ds, raw, truth)."""
    rng = np.random.default_rng(seed)
    counts = np.full(B, n_b) if counts is None else np.asarray(counts)
    L = np.asarray(LS, dtype=float)[:, None]
    beta = np.asarray(BETAS)[None, :]
    mu_e, sd_e = -1.0 - 2.0 * beta - 0.01 * L, 0.05 * (1.0 + beta) * (8.0 / L)
    sd_m = 0.1 + 0.2 * beta * (4.0 / L)
    shape = (len(LS), len(BETAS), R, int(counts.sum()))
    e = mu_e[..., None, None] + sd_e[..., None, None] * rng.standard_normal(shape)
    m = sd_m[..., None, None] * rng.standard_normal(shape)
    acc = rng.uniform(size=shape)
    a2 = 2.0 / math.pi  # <|z|>^2 for a standard normal z
    truth = {
        "energy": mu_e, "sd_e": sd_e, "magnetization": sd_m * math.sqrt(a2), "acceptance": 0.5 + 0 * L * beta,
        "specific_heat": beta**2 * L**2 * sd_e**2,
        "susceptibility": beta * L**2 * sd_m**2 * (1.0 - a2),
        "binder": 0.0 * L * beta,  # 1 - 3 s^4 / (3 s^4) for a Gaussian m
        # sd of the sample variance of |m| / s: sqrt((mu4 - var^2) / n), mu4 = 3 - 2 a2 - 3 a2^2
        "sd_var_abs_m": math.sqrt(3.0 - 2.0 * a2 - 3.0 * a2**2 - (1.0 - a2) ** 2),
        "n": R * int(counts.sum()),
    }
    return dataset(e, m, acc, counts), {"e": e, "m": m, "acc": acc}, truth


def ar1(rng, rho, shape):
    """Stationary AR(1) series with unit variance along the last axis."""
    noise = rng.standard_normal(shape)
    noise[..., 0] /= math.sqrt(1.0 - rho**2)  # stationary start
    return lfilter([math.sqrt(1.0 - rho**2)], [1.0, -rho], noise, axis=-1)


def ar1_case(rho_e=(0.0, 0.6), rho_m=(0.8, 0.3), R=32, B=50, n_b=200, measure_every=5, seed=1):
    """AR(1) series of e and |m| along beta (one L), binned: known tau_int per beta."""
    rng = np.random.default_rng(seed)
    shape = (1, 1, R, B * n_b)
    e = np.concatenate([-1.2 + 0.3 * ar1(rng, r, shape) for r in rho_e], axis=1)
    m = np.concatenate([0.6 + 0.1 * ar1(rng, r, shape) for r in rho_m], axis=1)
    acc = np.full_like(e, 0.5)
    ds = dataset(e, m, acc, np.full(B, n_b), Ls=(16,), betas=(0.3, 0.5)[: len(rho_e)], measure_every=measure_every)
    tau = {name: measure_every * (1.0 + np.asarray(r)) / (2.0 * (1.0 - np.asarray(r)))
           for name, r in (("e", rho_e), ("abs_m", rho_m))}
    return ds, tau


@pytest.fixture(scope="module")
def gaussian():
    return gaussian_case()


def test_plain_means_are_means_of_all_measurements_with_jackknife_std_over_sqrt_n(gaussian):
    ds, raw, truth = gaussian
    n_blocks = ds.sizes["realization"] * ds.sizes["bin"]
    for method, name, series in (("energy", "bin_e", raw["e"]), ("magnetization", "bin_abs_m", np.abs(raw["m"])),
                                 ("acceptance", "bin_acceptance", raw["acc"])):
        r = getattr(ds.ising, method)()
        assert r["mean"].dims == ("L", "beta")
        np.testing.assert_allclose(r["mean"], series.mean(axis=(2, 3)), rtol=1e-12)
        blocks = ds[name].values.reshape(len(LS), len(BETAS), n_blocks)
        np.testing.assert_allclose(r["stderr"], blocks.std(axis=-1, ddof=1) / math.sqrt(n_blocks), rtol=1e-10)
        assert np.all(np.abs(z_score(r["mean"].values, r["stderr"].values, truth[method])) < 4)
    se = ds.ising.energy()["stderr"].values
    np.testing.assert_allclose(se, truth["sd_e"] / math.sqrt(truth["n"]), rtol=0.25)  # 4 sigma of a 256-block std


def test_variance_based_estimates_match_the_known_distribution(gaussian):
    ds, raw, truth = gaussian
    n = truth["n"]
    beta, N = np.asarray(BETAS)[None, :], np.asarray(LS, dtype=float)[:, None] ** 2
    for method in ("specific_heat", "susceptibility", "binder"):
        r = getattr(ds.ising, method)()
        assert r["mean"].dims == ("L", "beta") and np.all(r["stderr"] > 0)
        assert np.all(np.abs(z_score(r["mean"].values, r["stderr"].values, truth[method])) < 4), method
    # the estimate is f of the means over all blocks (= all measurements), not bias-corrected
    e = raw["e"]
    c = ds.ising.specific_heat()
    np.testing.assert_allclose(c["mean"], beta**2 * N * ((e**2).mean(axis=(2, 3)) - e.mean(axis=(2, 3)) ** 2),
                               rtol=1e-9)
    # jackknife errors of the variance estimates: sd of a Gaussian sample variance is var sqrt(2 / n)
    np.testing.assert_allclose(c["stderr"], truth["specific_heat"] * math.sqrt(2.0 / n), rtol=0.3)
    chi = ds.ising.susceptibility()
    sd_m = np.sqrt(truth["susceptibility"] / (beta * N * (1.0 - 2.0 / math.pi)))
    np.testing.assert_allclose(chi["stderr"], beta * N * sd_m**2 * truth["sd_var_abs_m"] / math.sqrt(n), rtol=0.3)
    assert c["mean"].attrs["units"] == "k_B" and chi["mean"].attrs["units"] == "1/J"


def test_unequal_bins_are_weighted_by_their_measurements():
    counts = [len(c) for c in np.array_split(np.arange(1000), 16)]  # 63 and 62 measurements
    assert len(set(counts)) == 2
    ds, raw, _ = gaussian_case(R=3, counts=counts, seed=5)
    np.testing.assert_allclose(ds.ising.energy()["mean"], raw["e"].mean(axis=(2, 3)), rtol=1e-13)
    m = np.abs(raw["m"])
    beta, N = np.asarray(BETAS)[None, :], np.asarray(LS, dtype=float)[:, None] ** 2
    np.testing.assert_allclose(ds.ising.susceptibility()["mean"],
                               beta * N * ((m**2).mean(axis=(2, 3)) - m.mean(axis=(2, 3)) ** 2), rtol=1e-9)


def test_scalar_L_and_beta(gaussian):
    ds = gaussian[0]
    full = {name: getattr(ds.ising, name)() for name in ("energy", "specific_heat", "susceptibility", "binder")}
    full_exact = ds.ising.exact()
    for sel in ({"L": 1}, {"beta": 2}, {"L": 1, "beta": 2}):
        small = ds.isel(sel)
        for name, expected in full.items():
            result = getattr(small.ising, name)()
            xr.testing.assert_allclose(result, expected.isel(sel))
            assert all(result[d].ndim == 0 for d in sel)  # scalar coordinates stay
        xr.testing.assert_allclose(small.ising.exact(), full_exact.isel(sel))
        assert small.ising.exact()["energy"].dims == result["mean"].dims
    assert int(ds.isel(L=1).ising.specific_heat()["L"]) == 8


def test_dask_backed_input_stays_lazy_and_gives_the_same_numbers(gaussian):
    ds = gaussian[0]
    tau_ds = ar1_case(R=4, B=10, n_b=50)[0]
    names = ("energy", "magnetization", "acceptance", "specific_heat", "susceptibility", "binder")
    for chunked in (ds.chunk(), ds.chunk({"realization": 3})):
        tau_chunked = tau_ds.chunk({"realization": 3})
        with raise_if_dask_computes():
            lazy = {name: getattr(chunked.ising, name)() for name in names}
            lazy_tau = tau_chunked.ising.autocorrelation_time("abs_m")
        for name, result in lazy.items():
            assert isinstance(result["mean"].data, da.Array) and isinstance(result["stderr"].data, da.Array)
            xr.testing.assert_allclose(result.compute(), getattr(ds.ising, name)(), rtol=1e-12)
        assert isinstance(lazy_tau["mean"].data, da.Array)
        xr.testing.assert_allclose(lazy_tau.compute(), tau_ds.ising.autocorrelation_time("abs_m"), rtol=1e-12)


def test_autocorrelation_time_of_ar1_series():
    ds, tau = ar1_case()
    B, R, n_b = ds.sizes["bin"], ds.sizes["realization"], 200
    for quantity in ("e", "abs_m"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # bins of 1000 sweeps are long enough here
            r = ds.ising.autocorrelation_time(quantity)
        assert r["mean"].dims == ("L", "beta") and r["mean"].attrs["units"] == "sweeps"
        assert float(r["bin_sweeps"]) == 5 * n_b
        expected = tau[quantity][None, :]
        # statistics: each realization's estimate has a relative sd of sqrt(2 / (B - 1));
        # bias: finite bins underestimate by O(tau / bin length), a few percent here
        assert np.all(np.abs(r["mean"].values - expected) < 4 * r["stderr"].values + 0.05 * expected), quantity
        # the sd over R = 32 realizations: s / sigma ~ sqrt(chi2_31 / 31), within [0.55, 1.48] at 4 sigma
        ratio = r["stderr"].values / (expected * math.sqrt(2.0 / (B - 1) / R))
        assert np.all((ratio > 0.55) & (ratio < 1.48)), ratio
    # uncorrelated measurements: tau_int = measure_every / 2 (not measure_every)
    e = ds.ising.autocorrelation_time("e")
    assert abs(float(e["mean"][0, 0]) - 2.5) < 0.5


def test_autocorrelation_time_formula_on_a_hand_computed_case():
    """Two bins of two measurements, x = (-1, 1 | 0, 2), in two identical realizations.

    Bin means 0 and 1, mean 1/2, sum_b n_b (x_b - 1/2)^2 / (B - 1) = 1, single-measurement
    variance 6/4 - 1/4 + 1/4 (the bias correction Var(<x>) = 1/4) = 3/2: tau = 3 * 1 / 3 = 1.
    """
    x = np.broadcast_to(np.array([-1.0, 1.0, 0.0, 2.0]), (1, 1, 2, 4))
    ds = dataset(x, x, x, [2, 2], Ls=(4,), betas=(0.4,), measure_every=3)
    with pytest.warns(UserWarning, match="more than a tenth of the bin length"):
        r = ds.ising.autocorrelation_time()
    assert float(r["mean"][0, 0]) == pytest.approx(1.0) and float(r["stderr"][0, 0]) == 0.0
    assert float(r["bin_sweeps"]) == 6


def test_autocorrelation_time_single_realization_and_warning():
    ds, tau = ar1_case(R=1, B=50, n_b=200)
    r = ds.ising.autocorrelation_time("e")
    assert "realization" not in r["mean"].dims
    np.testing.assert_allclose(r["stderr"], r["mean"] * math.sqrt(2.0 / 49))
    # tau_int = 5 * 1.99 / 0.02 ~ 500 sweeps > bins of 1000 sweeps / 10
    slow, _ = ar1_case(rho_e=(0.99,), rho_m=(0.0,), R=2, B=20, n_b=200)
    with pytest.warns(UserWarning, match="autocorrelation time of e reaches .* sweeps at L=16, beta=0.3"):
        slow.ising.autocorrelation_time("e")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        slow.ising.autocorrelation_time("e", warn=False)
        slow.ising.autocorrelation_time("abs_m")  # uncorrelated |m|: no warning


def test_binder_crossings_of_linear_curves():
    """Binder curves ``U_L = 0.6 + (L / 4) (beta - beta_c)``: every pair crosses at beta_c."""
    beta_c, Ls, betas = 0.4407, (16, 8, 32), np.linspace(0.40, 0.48, 9)
    u = 0.6 + np.asarray(Ls, dtype=float)[:, None] / 4 * (betas - beta_c)
    R, B, n_b = 4, 8, 16
    m = np.ones((len(Ls), betas.size, R, B * n_b))
    ds = dataset(np.zeros_like(m), m, m, np.full(B, n_b), Ls=Ls, betas=betas)
    ds["bin_m4"] = ds["bin_m4"] * (3.0 * (1.0 - u))[:, :, None, None]  # <m^2> = 1: U = 1 - <m^4> / 3
    exact = ds.ising.binder_crossings()
    assert exact.sizes["pair"] == 2
    np.testing.assert_array_equal(exact["L_small"], [8, 16])
    np.testing.assert_array_equal(exact["L_large"], [16, 32])
    np.testing.assert_allclose(exact["mean"], beta_c, rtol=1e-12)
    np.testing.assert_allclose(exact["binder"], 0.6, rtol=1e-12)
    np.testing.assert_array_equal(exact["n_crossings"], [1, 1])
    # with noise on every block: the crossing is within its propagated error
    rng = np.random.default_rng(3)
    noisy = ds.copy()
    noisy["bin_m4"] = ds["bin_m4"] + 0.02 * rng.standard_normal(ds["bin_m4"].shape)
    r = noisy.ising.binder_crossings()
    assert np.all(r["stderr"] > 0) and np.all(np.abs(z_score(r["mean"].values, r["stderr"].values, beta_c)) < 4)
    with pytest.raises(ValueError, match="2 or more values of 'L'"):
        ds.isel(L=0).ising.binder_crossings()


def _curves(small, large, s_small, s_large, x):
    return xr.Dataset({"mean": (("L", "beta"), [small, large]), "stderr": (("L", "beta"), [s_small, s_large])},
                      coords={"L": [8, 16], "beta": x})


def test_binder_crossing_error_propagation():
    # symmetric case by hand: D = (-1, 1), s_k^2 = 0.02: stderr = 1 / 4 * sqrt(0.02 + 0.02) = 0.05
    r = ising.binder_crossings(_curves([1.0, 0.0], [0.0, 1.0], [0.1, 0.1], [0.1, 0.1], [0.0, 1.0]))
    assert float(r["mean"][0]) == pytest.approx(0.5) and float(r["stderr"][0]) == pytest.approx(0.05)
    assert float(r["binder"][0]) == pytest.approx(0.5)
    # asymmetric errors: compare with a Monte Carlo propagation of the four Gaussian points
    x, small, large = np.array([0.4, 0.5]), np.array([0.5, 0.5]), np.array([0.2, 1.0])
    s_small, s_large = np.array([1e-3, 2e-3]), np.array([3e-3, 4e-3])
    r = ising.binder_crossings(_curves(small, large, s_small, s_large, x))
    assert float(r["mean"][0]) == pytest.approx(0.4 + 0.1 * 0.3 / 0.8)
    rng = np.random.default_rng(4)
    d = (large - small) + np.hypot(s_small, s_large) * rng.standard_normal((200_000, 2))
    crossings = x[0] + (x[1] - x[0]) * d[:, 0] / (d[:, 0] - d[:, 1])
    assert float(r["stderr"][0]) == pytest.approx(crossings.std(), rel=0.02)


def test_binder_crossing_picks_the_significant_sign_change_and_nan_without_one():
    x = np.linspace(0.3, 0.55, 6)
    d = np.array([0.01, -0.01, -0.3, 0.3, 0.4, 0.5])  # noise crossing, then the real one
    r = ising.binder_crossings(_curves(np.zeros(6), d, np.full(6, 0.01), np.full(6, 0.01), x))
    assert int(r["n_crossings"][0]) == 2
    assert float(r["mean"][0]) == pytest.approx(0.5 * (x[2] + x[3]))
    r = ising.binder_crossings(_curves(np.zeros(6), np.abs(d), np.full(6, 0.01), np.full(6, 0.01), x))
    assert np.isnan(r["mean"][0]) and np.isnan(r["stderr"][0]) and int(r["n_crossings"][0]) == 0


def test_exact_and_onsager_tabulate_theory(gaussian):
    ds = gaussian[0]
    exact = ds.ising.exact()
    assert exact["energy"].dims == ("L", "beta")
    for i, L in enumerate(LS):
        energy, heat = theory.ising_exact(L, np.asarray(BETAS))
        np.testing.assert_allclose(exact["energy"][i], energy, rtol=1e-14)
        np.testing.assert_allclose(exact["specific_heat"][i], heat, rtol=1e-14)
    onsager = ds.ising.onsager()
    assert onsager["energy"].dims == ("beta",)
    for name in ("energy", "specific_heat", "magnetization"):
        np.testing.assert_allclose(onsager[name], getattr(theory, f"onsager_{name}")(np.asarray(BETAS)), rtol=1e-14)
    scalar = ds.isel(beta=0).ising.onsager()
    assert scalar["magnetization"].ndim == 0 and float(scalar["energy"]) == pytest.approx(theory.onsager_energy(0.3))


def test_exact_passes_each_L_as_int_with_the_beta_array(monkeypatch, gaussian):
    calls = []

    def stub(L, beta):
        calls.append((type(L), np.shape(beta)))
        return L * beta, L + beta

    monkeypatch.setattr(theory, "ising_exact", stub)
    exact = gaussian[0].ising.exact()
    assert calls == [(int, (3,)), (int, (3,))]
    np.testing.assert_allclose(exact["energy"], np.outer(LS, BETAS))
    np.testing.assert_allclose(exact["specific_heat"], np.add.outer(LS, BETAS))


def test_missing_variables_and_bad_arguments(gaussian):
    ds = gaussian[0]
    with pytest.raises(ValueError, match="no 'bin_e2'"):
        ds.drop_vars("bin_e2").ising.specific_heat()
    with pytest.raises(ValueError, match="no 'bin_m4'"):
        ds.drop_vars("bin_m4").ising.binder()
    with pytest.raises(ValueError, match="snapshot=True"):
        ds.ising.plot_snapshot(L=4, beta=0.3, realization=0)
    with pytest.raises(ValueError, match="measure_every"):
        ds.drop_attrs().ising.autocorrelation_time()
    with pytest.raises(ValueError, match="quantity must be one of"):
        ds.ising.autocorrelation_time("m")
    with pytest.raises(ValueError, match="at least 2 blocks"):
        ds.isel(realization=[0], bin=[0]).ising.energy()
    with pytest.raises(ValueError, match="at least 2 bins"):
        ds.isel(bin=[0]).ising.autocorrelation_time()


@pytest.fixture
def snapshots():
    """Final spins of L = 4 and 6, zero-padded to 6 x 6."""
    rng = np.random.default_rng(7)
    spins = rng.choice(np.array([-1, 1], dtype=np.int8), size=(2, 2, 3, 6, 6))
    spins[0, ..., 4:, :] = 0
    spins[0, ..., :, 4:] = 0
    ds = gaussian_case(R=3, B=2, n_b=2)[0].isel(beta=[0, 1])
    ds["snapshot"] = (("L", "beta", "realization", "y", "x"), spins)
    return ds


def test_plot_snapshot(snapshots):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spins = snapshots["snapshot"].values
    ax = snapshots.ising.plot_snapshot(L=4, beta=0.4 + 1e-12, realization=2)
    np.testing.assert_array_equal(ax.images[0].get_array(), spins[0, 1, 2, :4, :4])
    assert "L = 4" in ax.get_title() and "beta = 0.4" in ax.get_title()
    _, ax2 = plt.subplots()
    assert snapshots.ising.plot_snapshot(ax=ax2, L=8, beta=0.3, realization=0) is ax2
    np.testing.assert_array_equal(ax2.images[0].get_array(), spins[1, 0, 0])
    # scalar L and a size-1 realization dimension need no selection
    single = snapshots.isel(L=0, realization=[1])
    ax3 = single.ising.plot_snapshot(beta=0.3)
    np.testing.assert_array_equal(ax3.images[0].get_array(), spins[0, 0, 1, :4, :4])
    with pytest.raises(ValueError, match="not a single lattice"):
        snapshots.ising.plot_snapshot(L=4, beta=0.3)
    with pytest.raises(ValueError, match="L=5 is not in"):
        snapshots.ising.plot_snapshot(L=5, beta=0.3, realization=0)
    with pytest.raises(ValueError, match="L=8 is not in"):
        single.ising.plot_snapshot(L=8, beta=0.3)
    with pytest.raises(ValueError, match="no coordinate 'T'"):
        snapshots.ising.plot_snapshot(T=2.0)
    plt.close("all")


# --------------------------------------------------------------------------- equilibration


def test_drift_raises_no_false_alarm_on_slow_chains_at_equilibrium():
    # 8 stationary AR(1) chains whose correlation time (~1000 measurements) far exceeds their bins of
    # 20: the scatter of the bins would call them drifting, their spread across chains does not. Over
    # 40 seeds the probability of any alarm is 1% by design; more than 3 alarms would be 1e-5 likely.
    alarms = 0
    for seed in range(40):
        ds, _ = ar1_case(rho_e=(0.999,), rho_m=(0.999,), R=8, B=64, n_b=20, seed=seed)
        alarms += bool(ds.ising.equilibration()["drifting"].any())
    assert alarms <= 3, alarms


def test_drift_finds_the_chain_that_still_relaxes_and_warns_naming_it():
    ds, _ = ar1_case(rho_e=(0.5,), rho_m=(0.5,), R=8, B=64, n_b=20, seed=3)
    relaxing = ds.bin_e.values.copy()
    t = np.arange(64) / 64
    relaxing[0, 0, 5] += np.exp(-t / 0.2)  # chain 5: its energy still falling over the first fifth (13 sigma)
    ds["bin_e"] = (ds.bin_e.dims, relaxing)
    check = ds.ising.equilibration()
    assert check["drifting"].squeeze().values.tolist() == [i == 5 for i in range(8)]
    assert check.attrs["scale"] == "across chains"
    message = r"1 chain still drifting .* L=16, beta=0\.3: chains 5\. .*thermalization"
    with pytest.warns(RuntimeWarning, match=message):
        ds.ising.specific_heat()


def test_drift_with_two_chains_uses_the_bins_and_stays_quiet_without_drift():
    # independent bins (no correlation): with fewer than 4 chains the scale is the bins' scatter
    alarms = 0
    for seed in range(40):
        ds, _ = ar1_case(rho_e=(0.0,), rho_m=(0.0,), R=2, B=30, n_b=50, seed=seed)
        check = ds.ising.equilibration()
        alarms += bool(check["drifting"].any())
    assert alarms <= 3 and check.attrs["scale"] == "within chains"
    trend = ds.bin_e + xr.DataArray(np.linspace(0.0, 0.2, 30), dims="bin")  # 0.2 against a bin scatter of 0.004
    ds["bin_e"] = trend
    assert bool(ds.ising.equilibration()["drifting"].all())


def test_drift_weights_align_as_in_xarray_and_a_third_without_weight_is_nan_without_warnings():
    from gpuensembles.analysis.statistics import drift

    rng = np.random.default_rng(5)
    series = xr.DataArray(rng.normal(size=(6, 12)), dims=("realization", "bin"), coords={"bin": np.arange(12)})
    # weights over shifted bins and a dimension of their own: the shared bins, every dimension
    weights = xr.DataArray(rng.integers(1, 5, size=(2, 12)).astype(float), dims=("extra", "bin"),
                           coords={"bin": np.arange(1, 13)})
    both = drift(series, "bin", weights=weights)
    assert set(both.z.dims) == {"extra", "realization"}
    shared = slice(1, 11)
    for k in range(2):
        alone = drift(series.sel(bin=shared), "bin", weights=weights.isel(extra=k).sel(bin=shared))
        np.testing.assert_array_equal(both.z.isel(extra=k).transpose(*alone.z.dims).values, alone.z.values)
    empty = xr.DataArray(np.r_[np.zeros(4), np.ones(8)], dims="bin", coords={"bin": np.arange(12)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check = drift(series, "bin", weights=empty)
    assert bool(np.isnan(check.z).all()) and not bool(check.drifting.any())


def test_equilibration_needs_three_bins_a_third():
    ds, _ = ar1_case(R=8, B=8, n_b=20)
    with pytest.raises(ValueError, match="at least 9 bins"):
        ds.ising.equilibration()
