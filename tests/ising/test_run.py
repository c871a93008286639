"""2D Ising on the CPU backend: exact finite-L thermodynamics, both kernels, every storage
layout, snapshots, determinism and input validation."""

import warnings

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.core import engine
from gpuensembles.models.ising import kernels as lattices
from gpuensembles.models.ising import physics as metropolis
from gpuensembles.models.ising import run as ising_model
from gpuensembles.models.ising import theory

from .. import z_score

BETAS = [0.3, 0.4, float(theory.ISING_BETA_C), 0.5]
CPU = dict(backend="cpu", progress=False)


def assert_matches_exact(ds):
    # an equilibrium run matches the exact values, and nothing warns
    exact = ds.ising.exact()
    for name in ("energy", "specific_heat"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            est = getattr(ds.ising, name)()
        z = z_score(est["mean"], est["stderr"], exact[name])
        assert np.all(np.abs(z) < 4), (name, z.values)


@pytest.mark.slow
def test_multispin_energy_and_specific_heat_match_exact_finite_L():
    # 4 bins of 1000 sweeps per chain, far longer than the energy's autocorrelation time
    ds = ge.ising(L=[16, 32], beta=BETAS, sweeps=4000, thermalization=1000, realizations=64, bins=4, start="cold",
                  seed=1, **CPU)
    assert ds.attrs["layout"] == "L=16: replicas; L=32: replicas"
    tau = ds.ising.autocorrelation_time(warn=False)
    assert float(tau["mean"].max()) < 1000 / 20
    assert_matches_exact(ds)


def test_int8_matches_exact_finite_L():
    assert_matches_exact(ge.ising(L=16, beta=BETAS, sweeps=3000, thermalization=500, realizations=32, bins=4,
                                  start="cold", kernel="int8", seed=2, **CPU))


@pytest.mark.parametrize("kernel", ["multispin", "int8"])
def test_magnetization_and_binder_match_enumeration_at_L4(kernel):
    L, betas = 4, np.array([0.2, 0.44, 0.7])
    spins = 1 - 2 * ((np.arange(2 ** (L * L))[:, None] >> np.arange(L * L)) & 1)
    s = spins.reshape(-1, L, L)
    energy = -(s * np.roll(s, 1, 1) + s * np.roll(s, 1, 2)).sum((1, 2))
    m = s.sum((1, 2)) / L**2
    w = np.exp(-betas[:, None] * (energy - energy.min()))
    w /= w.sum(1, keepdims=True)
    abs_m, m2, m4 = (w * np.abs(m)).sum(1), (w * m**2).sum(1), (w * m**4).sum(1)
    ds = ge.ising(L=L, beta=betas, sweeps=4000, realizations=32, bins=4, kernel=kernel, seed=3, **CPU)
    est = ds.ising.magnetization()
    assert np.all(np.abs(z_score(est["mean"], est["stderr"], abs_m)) < 4)
    u = ds.ising.binder()
    assert np.all(np.abs(z_score(u["mean"], u["stderr"], 1 - m4 / (3 * m2**2))) < 4)


def test_acceptance_is_one_at_infinite_temperature_and_rare_when_cold():
    ds = ge.ising(L=8, beta=[0.0, 2.0], sweeps=50, realizations=4, start="cold", seed=4, **CPU)
    acc = ds.ising.acceptance()["mean"]
    assert acc.sel(beta=0.0) > 1 - 1e-6  # accepted unless a 32-bit uniform hits the threshold exactly
    assert acc.sel(beta=2.0) < 1e-3


def _energy_and_magnetization(spins):
    spins = spins.astype(float)
    e = -(spins * np.roll(spins, 1, -1) + spins * np.roll(spins, 1, -2)).sum((-1, -2)) / spins[0].size
    return e, spins.mean((-1, -2))


@pytest.mark.parametrize("layout", ["replicas", "strips", "int8"])
def test_snapshot_reproduces_the_last_measurement(monkeypatch, layout):
    # Unpacking the stored bits and counting bonds must give what the kernel measured.
    if layout == "strips":
        monkeypatch.setattr(ising_model, "STRIPS_MIN_L", 64)
    ds = ge.ising(L=64 if layout == "strips" else [6, 8], beta=[0.35, 0.6], sweeps=6, measure_every=3,
                  realizations=3, series=True, snapshot=True, kernel="int8" if layout == "int8" else "multispin",
                  seed=5, **CPU)
    if layout == "strips":
        assert ds.attrs["layout"] == "L=64: strips"
        ds = ds.expand_dims("L")
    for size in np.atleast_1d(ds.L.values):
        one = ds.sel(L=size)
        spins = one.snapshot.values[..., :size, :size]
        assert set(np.unique(spins)) <= {-1, 1}
        e, m = _energy_and_magnetization(spins.reshape(-1, size, size))
        np.testing.assert_allclose(e, one.e.isel(sample=-1).values.ravel(), atol=1e-12)
        np.testing.assert_allclose(m, one.m.isel(sample=-1).values.ravel(), atol=1e-12)


@pytest.mark.parametrize("L", [8, 24])
def test_int8_quads_as_words_match_site_by_site(L):
    # S % 4 == 0: a quad is updated as one uint32 (byte-wise bit operations); it must give the
    # site-by-site update's spins and flip counts bit for bit, in every group.
    S, n_groups = L // 2, 3
    rng = np.random.default_rng(L)
    sites = (1 - 2 * rng.integers(0, 2, n_groups * 2 * L * S)).astype(np.int8)
    words = sites.copy()
    thr = np.stack(metropolis.thresholds(np.array([0.2, 0.44, 0.9])), axis=-1).ravel()
    seed, key = np.uint32(9), metropolis.philox_key(L, metropolis.TAG_INT8)
    flips = [0, 0]
    for hs in range(6):
        for g in range(n_groups):
            for y in range(L):
                for q in range(S // 4):
                    args = (g * 2 * L * S, 2 * g, hs % 2, y, q, L, S, False, thr, seed, key, np.uint32(hs), g)
                    flips[0] += lattices._update_quad_sites(sites, np.empty(0, np.uint32), *args)
                    flips[1] += lattices._update_quad_words(words, words.view(np.uint32), *args)
        np.testing.assert_array_equal(words, sites)
    assert flips[0] == flips[1] > 0


def test_same_seed_same_numbers_for_any_chunking_and_cpu_mode(monkeypatch):
    kw = dict(L=[6, 16], beta=np.linspace(0.3, 0.5, 5), sweeps=20, realizations=10, series=True, seed=6, **CPU)
    whole = ge.ising(**kw)
    chunked = ge.ising(chunks=1, **kw)
    assert chunked.bin_e.chunks is not None
    monkeypatch.setattr(lattices, "_MIN_ITEMS_PER_HALF_SWEEP", 0)  # threads take items, not groups
    monkeypatch.setattr(lattices.numba.config, "NUMBA_NUM_THREADS", 10**6)
    items = ge.ising(**kw)
    for name in whole.data_vars:
        np.testing.assert_array_equal(chunked[name].values, whole[name].values)
        np.testing.assert_array_equal(items[name].values, whole[name].values)
    assert not np.array_equal(ge.ising(**{**kw, "seed": 7}).e.values, whole.e.values)


def test_scalar_parameters_stay_scalar_coordinates_and_round_trip(tmp_path):
    ds = ge.ising(L=8, beta=0.4, sweeps=10, realizations=2, seed=8, **CPU)
    assert "L" not in ds.dims and "beta" not in ds.dims and int(ds.L) == 8
    assert ds.attrs["seed"] == 8 and "ising(" in ds.attrs["history"]
    ds.to_netcdf(tmp_path / "ising.nc")
    back = ge.open_dataset(tmp_path / "ising.nc")
    np.testing.assert_array_equal(back.bin_e.values, ds.bin_e.values)


@pytest.mark.parametrize("kwargs, match", [
    (dict(L=7), "L must be even"),
    (dict(L=0), "L must be even"),
    (dict(L=[8, 8]), "repeated"),
    (dict(L=2.5), "L must be even"),
    (dict(beta=-0.1), "beta must lie in"),
    (dict(beta=np.nan), "beta must be finite"),
    (dict(sweeps=10, measure_every=3), "multiple of measure_every"),
    (dict(sweeps=0), r"sweeps must be an integer in \[1, 2\*\*31 - 1\]"),
    (dict(sweeps=2**31), "sweeps must be an integer in"),
    (dict(realizations=10**12), r"realizations=1000000000000 .* needs about [\d.]+ TiB"),
    (dict(bins=11), "bins must be at most"),
    (dict(start="warm"), "start must be one of"),
    (dict(kernel="int16"), "kernel must be one of"),
    (dict(realizations=0), "realizations must be"),
    (dict(thermalization=-1), "thermalization must be"),
    (dict(backend="tpu"), "backend must be one of"),
])
def test_bad_input_is_refused_before_running(kwargs, match):
    kw = dict(L=8, beta=0.4, sweeps=10, realizations=2, **CPU)
    with pytest.raises(ValueError, match=match):
        ge.ising(**{**kw, **kwargs})


@pytest.mark.parametrize("kwargs, match", [
    (dict(L="8"), "L must be a real number"),
    (dict(L=[8, None]), "L must be a real number"),
    (dict(L=True), "L must be a real number"),
    (dict(series="yes"), "series must be True or False"),
    (dict(snapshot=np.nan), "snapshot must be True or False"),
    (dict(sweeps="10"), "sweeps must be an integer"),
])
def test_wrong_types_are_refused(kwargs, match):
    kw = dict(L=8, beta=0.4, sweeps=10, realizations=2, **CPU)
    with pytest.raises(TypeError, match=match):
        ge.ising(**{**kw, **kwargs})


def test_resident_rows_give_every_warp_work():
    # 64^2 (32 words a row): 8 warps take the 8 pieces of 8 rows in one turn, 16 warps 16 of 4,
    # 12 warps 11 of 6 (the last 4 rows); 16^2 (8 words a row, four pieces side by side per
    # warp): 4 warps take the 8 pieces of 2 rows in one turn
    assert [lattices.resident_rows(64, 32, t) for t in (256, 512, 384)] == [8, 4, 6]
    assert lattices.resident_rows(16, 8, 128) == 2

    def busiest(L, S, threads, rows):  # rows walked by the busiest warp, dealing the pieces out one by one
        side_by_side, warps = 32 // min(S, 32), threads // 32
        pieces = [(column, y) for y in range(0, L, rows) for column in range(-(-S // 32))]
        turns = [len({k // side_by_side // warps for k in range(len(pieces)) if k // side_by_side % warps == w})
                 for w in range(warps)]
        return max(turns) * rows

    for L in range(4, lattices.RESIDENT_MAX_L + 1, 2):
        for threads in range(32, 1025, 32):
            rows = lattices.resident_rows(L, L // 2, threads)
            assert rows in (2, 4, 6, 8)
            assert busiest(L, L // 2, threads, rows) == min(busiest(L, L // 2, threads, k) for k in (2, 4, 6, 8))


def test_resident_threads_by_groups_and_setting(monkeypatch):
    # two blocks share a multiprocessor when the groups outnumber them; never more than the kernel allows
    monkeypatch.delenv(lattices.RESIDENT_THREADS_VARIABLE, raising=False)
    assert lattices.resident_threads(256, 132, 1024, 2048) == 256
    assert lattices.resident_threads(15, 132, 1024, 2048) == 512
    assert lattices.resident_threads(15, 132, 480, 2048) == 480
    # and no more than two words a thread: 32^2 (512 words) 256, 6^2 (18 words) one warp
    assert lattices.resident_threads(5, 132, 1024, 512) == 256
    assert lattices.resident_threads(5, 132, 1024, 18) == 32
    monkeypatch.setenv(lattices.RESIDENT_THREADS_VARIABLE, "384")
    assert lattices.resident_threads(256, 132, 1024, 512) == 384
    with pytest.raises(ValueError, match="at most 320 threads per block.*ising_resident"):
        lattices.resident_threads(256, 132, 320, 2048)
    monkeypatch.setenv(lattices.RESIDENT_THREADS_VARIABLE, "100")
    with pytest.raises(ValueError, match="multiple of 32"):
        lattices.resident_threads(256, 132, 1024, 2048)


def test_sweep_segments_end_at_every_measured_sweep():
    # every sweep once, in order; a launch of at most `most` sweeps ends at each measured sweep,
    # and says so exactly then
    for therm, sweeps, every, most in [(0, 6, 2, 10), (5, 12, 3, 4), (3, 4, 4, 1), (7, 20, 20, 6), (0, 1, 1, 1)]:
        segments = list(lattices.sweep_segments(therm, sweeps, every, most))
        measured = {therm + k * every - 1 for k in range(1, sweeps // every + 1)}
        assert [t for first, stop, _ in segments for t in range(first, stop)] == list(range(therm + sweeps))
        assert all(0 < stop - first <= most for first, stop, _ in segments)
        assert {stop - 1 for _, stop, m in segments if m} == measured
        assert not any(stop - 1 in measured for _, stop, m in segments if not m)
        assert measured <= {stop - 1 for _, stop, _ in segments}


def test_measured_launches_cover_the_sweeps_with_at_most_so_many_measurements():
    # the fused launches: every sweep once, in order, each launch at most `most` sweeps and
    # `measurements` measured sweeps, which it says how many it has; within a span the same cut there
    for therm, sweeps, every, most, measurements, span in [(0, 6, 2, 10, 1, None), (5, 12, 3, 4, 2, None),
                                                           (3, 40, 1, 100, 7, None), (7, 20, 20, 6, 3, None),
                                                           (4, 30, 3, 50, 4, None), (6, 40, 4, 100, 100, None),
                                                           (5, 30, 2, 9, 4, (4, 23)), (0, 1, 1, 1, 1, None)]:
        launches = list(lattices.measured_launches(therm, sweeps, every, most, measurements, span))
        first, end = span or (0, therm + sweeps)
        assert [t for a, b, _ in launches for t in range(a, b)] == list(range(first, end))
        measured = {therm + k * every - 1 for k in range(1, sweeps // every + 1)}
        assert all(0 < b - a <= most and 0 <= n <= measurements for a, b, n in launches)
        assert [n for a, b, n in launches] == [len(measured & set(range(a, b))) for a, b, _ in launches]
        # a launch that counts (n > 0) holds no thermalization sweep, and only its measured sweep
        # where they are APART_EVERY or more apart
        assert all(a >= therm for a, b, n in launches if n)
        if every >= lattices.APART_EVERY:
            assert all(b - a == 1 for a, b, n in launches if n)
    assert lattices.measurements_per_launch(1) == lattices._MEASUREMENTS_PER_LAUNCH
    assert lattices.measurements_per_launch(10**6) == 1  # counts of a million groups: one measurement a launch
    assert lattices.measurements_per_launch(2000) * 2000 * 32 * 3 * 8 <= lattices._COUNT_BYTES


@pytest.mark.parametrize("packed", [0.5, 1.0])
def test_cluster_shares_weigh_packed_lattices_by_their_cost(monkeypatch, packed):
    # benchmarks.scaling's case on 4 workers: the 256^2 lattices (strips) and the 16 groups of
    # 32 lattices of 512^2 (replicas, at `packed` the cost of a spin in strips) go whole to the
    # first worker, with the 1024^2 lattices that even its share out; the other three share the rest
    monkeypatch.setitem(ising_model.LAYOUT_COST, "replicas", packed)
    betas = np.linspace(0.40, 0.48, 16)
    setups = [ising_model._Setup.make("multispin", L, betas, 32, False, 3, 64, 0, False, "cpu")
              for L in (256, 512, 1024)]
    assert [s.layout for s in setups] == ["strips", "replicas", "strips"]
    chains = engine.Chains.balanced(ising_model._share_costs(setups), 4)
    small, middle, large = (chains.next_shares(s.n_groups) for s in setups)
    assert small == [(0, 512, 0)] and middle == [(0, 16, 0)]
    packed_spins = 16 * 32 * 512**2 * packed
    first = ((512 * 1024**2 + 512 * 256**2 + packed_spins) / 4 - 512 * 256**2 - packed_spins) / 1024**2
    assert [chain for _, _, chain in large] == [0, 1, 2, 3]
    assert abs(large[0][1] - first) <= 1
    assert max(hi - lo for lo, hi, _ in large[1:]) - min(hi - lo for lo, hi, _ in large[1:]) <= 1


def test_sweep_rows_give_half_the_resident_threads_a_column_else_the_fewest(monkeypatch):
    monkeypatch.delenv(lattices.SWEEP_ROWS_VARIABLE, raising=False)
    threads = 132 * 2048  # an H100's
    assert lattices.sweep_rows(1, 16384, 256, threads) == 8  # one 16384^2 lattice in strips: 4.2M words a colour
    assert lattices.sweep_rows(2, 8192, 128, threads) == 8  # two 8192^2 lattices: 262144 columns of 8 rows
    assert lattices.sweep_rows(1, 8192, 128, threads) == 4
    assert lattices.sweep_rows(1, 4096, 64, threads) == 2  # 262144 words: 131072 columns of two rows
    assert lattices.sweep_rows(1, 1024, 16, threads) == 2


def test_sweep_rows_count_rows_narrower_than_a_warp_as_whole_warps(monkeypatch):
    """1024^2 in strips has 16 words a row, and a task holds a whole warp (lanes 16-31 idle):
    64 such lattices fill the GPU as 2M lanes, where 16 of 2048^2 (as many words) fill it
    as 1M."""
    monkeypatch.delenv(lattices.SWEEP_ROWS_VARIABLE, raising=False)
    threads = 132 * 2048
    assert lattices.sweep_rows(16, 2048, 32, threads) == 4
    assert lattices.sweep_rows(64, 1024, 16, threads) == 8
    assert lattices.sweep_rows(32, 1024, 16, threads) == 4
    assert lattices.sweep_rows(16, 1024, 16, threads) == 2


def test_sweep_rows_variable_sets_them(monkeypatch):
    threads = 132 * 2048
    monkeypatch.setenv(lattices.SWEEP_ROWS_VARIABLE, "4")
    assert lattices.sweep_rows(1, 16384, 256, threads) == 4
    monkeypatch.setenv(lattices.SWEEP_ROWS_VARIABLE, "3")
    with pytest.raises(ValueError, match="GPUENSEMBLES_ISING_SWEEP_ROWS must be one of"):
        lattices.sweep_rows(1, 64, 1, threads)


def test_divide_by_a_divisor_is_exact_for_every_uint32():
    # the kernels' division by run-time values (multiply and shifts): equal to // and % for
    # divisors and numerators at the edges of their ranges (powers of two and their
    # neighbours, 2^32 - 1) and random ones
    rng = np.random.default_rng(5)
    edges = sorted({x for k in range(33) for x in (2**k - 1, 2**k, 2**k + 1) if 0 < x < 2**32})
    divisors = edges + rng.integers(1, 2**32, 300).tolist()
    numerators = [0] + edges + rng.integers(0, 2**32, 300).tolist()
    for d in divisors:
        div = lattices.divisor(np.uint32(d))
        for n in numerators + [d - 1, d, 2 * d - 1, 2 * d, (2**32 - 1) // d * d]:
            n %= 2**32
            q, r = lattices.divide(np.uint32(n), div)
            assert (int(q), int(r)) == divmod(n, d), (n, d)


def test_chains_still_coarsening_are_named_in_one_warning():
    # L = 32 below T_c from a hot start with 50 sweeps of thermalization: domains still grow, |m| rises
    with pytest.warns(RuntimeWarning, match=r"still drifting after the thermalization of 50 sweeps: .* at L=32, "
                                            r"beta=0\.5: chains .*increase thermalization"):
        ds = ge.ising(L=32, beta=[0.3, 0.5], sweeps=600, thermalization=50, realizations=8, start="hot", seed=4,
                      **CPU)
    check = ds.ising.equilibration()
    assert check["drifting"].sel(beta=0.5).any() and not check["drifting"].sel(beta=0.3).any()


def test_sweep_segments_within_a_span_are_those_of_the_whole_run_cut_there():
    for therm, sweeps, every, most, span in [(5, 12, 3, 4, (4, 11)), (0, 6, 2, 10, (3, 6)), (7, 20, 20, 6, (0, 9))]:
        inside = list(lattices.sweep_segments(therm, sweeps, every, most, span))
        assert [t for first, stop, _ in inside for t in range(first, stop)] == list(range(*span))
        measured = {therm + k * every - 1 for k in range(1, sweeps // every + 1)}
        assert {stop - 1 for _, stop, m in inside if m} == measured & set(range(*span))
    assert [lattices.measured_before(t, 5, 3) for t in (0, 5, 7, 8, 11)] == [0, 0, 0, 1, 2]


@pytest.mark.parametrize("kernel, L, realizations", [
    ("multispin", 16, 64),   # many groups: each thread runs whole groups
    ("multispin", 512, 1),   # one group of 512^2 lattices: the items of a half-sweep over the threads
    ("int8", 12, 3),
])
def test_a_run_in_pieces_equals_it_in_one(kernel, L, realizations):
    # what a stored run does between checkpoints: the same chains, bins and series to the bit
    kw = dict(L=L, beta=[0.3, 0.44], sweeps=12, thermalization=3, measure_every=2, realizations=realizations,
              series=True, snapshot=True, kernel=kernel, seed=9, **CPU)
    whole = ising_model._spans(15, 1)
    assert whole == [(0, 15)] and ising_model._spans(15, 4) == [(0, 4), (4, 8), (8, 12), (12, 15)]
    setup = ising_model._Setup.make(kernel, L, np.array(kw["beta"]), realizations, True, 9, 6, 6, True, "cpu")
    schedule = (3, 12, 2)
    one = ising_model._run_groups(setup, schedule, 0, setup.n_groups)

    class EverySpan:  # a store that saves after every piece and tells which pieces ran
        saved = {}

        def latest(self, block):
            return None

        def put(self, block, values):
            self.saved[block[-1]] = {k: v.copy() for k, v in values.items()}

        def forget(self, block):
            pass

    pieces = EverySpan()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ising_model, "CHECKPOINT_SECONDS", 0.0)
        patch.setattr(ising_model, "CHECKPOINT_PIECES", 5)
        stepped = ising_model._run_groups(setup, schedule, 0, setup.n_groups, checkpoints=pieces)
        for name in one:
            np.testing.assert_array_equal(stepped[name], one[name], err_msg=name)
        assert sorted(pieces.saved) == [3, 6, 9, 12]

        class ResumeAt9(EverySpan):  # resumed from the state saved after sweep 9
            def latest(self, block):
                return 9, pieces.saved[9]

        resumed = ising_model._run_groups(setup, schedule, 0, setup.n_groups, checkpoints=ResumeAt9())
        # what a run with a progress bar does: its sweeps in pieces, each piece's sweeps reported
        patch.setattr(ising_model, "PROGRESS_PIECES", 4)
        patch.setattr(ising_model, "PROGRESS_SECONDS", 0.0)  # after the first piece, one sweep a piece
        advanced = []
        shown = ising_model._run_groups(setup, schedule, 0, setup.n_groups, advance=advanced.append)
        assert advanced == [4] + [1] * 11
        patch.setattr(ising_model, "PROGRESS_SECONDS", 1e9)  # a fast run: the rest in one piece
        advanced.clear()
        ising_model._run_groups(setup, schedule, 0, setup.n_groups, advance=advanced.append)
        assert advanced == [4, 11]
    for name in one:
        np.testing.assert_array_equal(resumed[name], one[name], err_msg=name)
        np.testing.assert_array_equal(shown[name], one[name], err_msg=name)
    assert ge.ising(**kw).bin_e.size  # the public call of the same case runs
