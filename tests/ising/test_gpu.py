"""2D Ising on a real GPU (``pytest -m gpu``): bit-identical to the CPU backend on every
path, exact finite-L thermodynamics, Binder crossing at beta_c, int8 vs multi-spin."""

import warnings

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.ising import bands, theory
from gpuensembles.models.ising import kernels as lattices
from gpuensembles.models.ising import run as ising_model

from .. import requires_gpu, z_score

pytestmark = [pytest.mark.gpu, requires_gpu]
BETAS = [0.3, 0.4, float(theory.ISING_BETA_C), 0.5]


@pytest.mark.parametrize("path", ["resident", "launched", "strips", "bands", "int8"])
def test_gpu_configurations_equal_cpu(monkeypatch, tmp_path, path):
    # All arithmetic is integer: the GPU must reproduce the CPU chains bit for bit. "strips" runs
    # the column kernel, "bands" the band sweeps (10 lattices of 64^2: 8 bands of 8 rows each on
    # 80 or more multiprocessors)
    taken = _spy_on_bands(monkeypatch)
    run_together, together = ising_model.engine.run_together, []
    monkeypatch.setattr(ising_model.engine, "run_together",
                        lambda calls, at_once: together.append(at_once) or run_together(calls, at_once))
    if path == "launched":  # (10 lattices of 64^2 kept packed: few lattices go in strips)
        monkeypatch.setattr(lattices, "RESIDENT_MAX_L", 0)
        monkeypatch.setattr(ising_model, "FEW_SYSTEMS", 0)
    if path in ("strips", "bands"):
        monkeypatch.setattr(ising_model, "STRIPS_MIN_L", 64)
        monkeypatch.setattr(lattices, "RESIDENT_STRIPS_MAX_L", 0)
    if path == "strips":
        monkeypatch.setattr(bands, "MAX_WORDS", 0)
    # int8: L = 6 updates site by site, 16 and 264 four sites per uint32; 264 (33 quads a row)
    # and 200 (100 words a row) give a thread of the launched kernels several stretches of a row
    sizes = {"int8": [6, 16, 264], "launched": [8, 64, 200]}.get(path, [8, 64])
    kw = dict(L=sizes, beta=[0.3, 0.44], sweeps=40, thermalization=10,
              realizations=5, measure_every=2, series=True, snapshot=True, seed=11,
              kernel="int8" if path == "int8" else "multispin", progress=False)
    cpu, gpu = ge.ising(backend="cpu", **kw), ge.ising(backend="cuda", **kw)
    assert gpu.attrs["backend"] == "cuda"
    if path in ("resident", "strips", "bands"):  # resident: L = 8 packed, 64 in strips (few lattices)
        assert "L=64: strips" in gpu.attrs["layout"]
    assert (taken and all(sweeps and sweeps.bands > 1 for sweeps in taken)) if path == "bands" else not any(taken)
    # a stored run: its chunks run in pieces of sweeps, each saved, the lattices copied back in between
    monkeypatch.setattr(ising_model, "CHECKPOINT_SECONDS", 0.0)
    stored = ge.ising(backend="cuda", store=tmp_path / "run", **kw)
    assert together == [False, True, False]  # the CPU's sizes in turn, the GPU's at once, a stored run's in turn
    for name in cpu.data_vars:
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=name)
        np.testing.assert_array_equal(stored[name].values, cpu[name].values, err_msg=f"{name}, stored")


def _spy_on_bands(monkeypatch) -> list:
    """The band sweeps of each part of the lattices a run takes (None where it took the column kernel)."""
    launcher, taken = bands.launcher, []

    def spy(*args):
        taken.append(launcher(*args))
        return taken[-1]

    monkeypatch.setattr(bands, "launcher", spy)
    return taken


@pytest.mark.parametrize("halo", [4, 16])
def test_gpu_band_sweeps_of_one_lattice_equal_cpu(monkeypatch, halo):
    # one 1024^2 lattice in bands of 8 rows (128 of them on an H100): halos of 4 rows (2 rounds
    # for the 8 half-sweeps of the thermalization), and of 16 rows (from two bands either side,
    # and several rows a thread), every sweep measured
    monkeypatch.setattr(bands, "HALO", halo)
    taken = _spy_on_bands(monkeypatch)
    kw = dict(L=1024, beta=0.44, sweeps=13, thermalization=4, realizations=1, series=True, snapshot=True, seed=13,
              progress=False)
    cpu, gpu = ge.ising(backend="cpu", **kw), ge.ising(backend="cuda", **kw)
    assert len(taken) == 1 and taken[0] is not None and taken[0].bands >= 64
    for name in cpu.data_vars:
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=name)


def test_gpu_resident_strips_equal_cpu():
    # few lattices in strips, each in one block's shared memory: 64^2 (one word a row of a
    # colour, 64 threads), 192^2 (3 words a row: 576 words over 256 threads) and 256^2 (4 a
    # row, 1024 words: 4 a thread); every sweep measured
    kw = dict(L=[64, 192, 256], beta=[0.3, 0.44, 0.6], sweeps=30, thermalization=5, realizations=2, bins=4,
              series=True, snapshot=True, seed=13, progress=False)
    cpu, gpu = ge.ising(backend="cpu", **kw), ge.ising(backend="cuda", **kw)
    assert gpu.attrs["layout"] == "L=64: strips; L=192: strips; L=256: strips"
    assert lattices.cuda_runner("multispin").kernels[-1].overloads  # the resident strips kernel ran
    for name in cpu.data_vars:
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=name)


@pytest.mark.parametrize("rows", lattices.SWEEP_ROWS)
def test_gpu_column_sweeps_of_any_rows_a_thread_equal_cpu(monkeypatch, rows):
    # the column kernel of each K (sweep_rows picks one by the lattices' lanes and the GPU's
    # threads): 6 lattices each of 64^2 in strips (one word a row) and of 128^2 (two)
    monkeypatch.setenv(lattices.SWEEP_ROWS_VARIABLE, str(rows))
    monkeypatch.setattr(ising_model, "STRIPS_MIN_L", 64)
    monkeypatch.setattr(lattices, "RESIDENT_STRIPS_MAX_L", 0)
    monkeypatch.setattr(bands, "MAX_WORDS", 0)
    kw = dict(L=[64, 128], beta=[0.3, 0.44], sweeps=20, thermalization=4, realizations=3, measure_every=2,
              seed=13, snapshot=True, progress=False)
    cpu, gpu = ge.ising(backend="cpu", **kw), ge.ising(backend="cuda", **kw)
    assert "L=128: strips" in gpu.attrs["layout"]
    for name in cpu.data_vars:
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=f"{name}, K = {rows}")


def test_gpu_strips_over_several_column_blocks_equal_cpu():
    # 6144 = 96 words a row in strips: three blocks of 32 words, the first and last with a lane
    # across a strip edge (rotated side words), the middle one with none
    kw = dict(L=6144, beta=0.44, sweeps=4, thermalization=0, realizations=1, seed=12, snapshot=True,
              progress=False)
    cpu, gpu = ge.ising(backend="cpu", **kw), ge.ising(backend="cuda", **kw)
    assert "strips" in gpu.attrs["layout"]
    for name in cpu.data_vars:
        np.testing.assert_array_equal(gpu[name].values, cpu[name].values, err_msg=name)


@pytest.mark.parametrize("L", [16, 32])
def test_gpu_multispin_matches_exact_finite_L(L):
    ds = ge.ising(L=L, beta=BETAS, sweeps=20_000, thermalization=2_000, realizations=256, bins=4, start="cold",
                  seed=4, backend="cuda", progress=False)
    exact = ds.ising.exact()
    for name in ("energy", "specific_heat"):
        est = getattr(ds.ising, name)()
        z = z_score(est["mean"], est["stderr"], exact[name])
        assert np.all(np.abs(z) < 4), (name, z.values)


def test_gpu_binder_curves_cross_at_beta_c():
    betas = np.linspace(0.43, 0.45, 9)
    ds = ge.ising(L=[16, 32, 64], beta=betas, sweeps=40_000, thermalization=5_000, realizations=256, bins=4,
                  start="cold", seed=5, backend="cuda", progress=False)
    crossings = ds.ising.binder_crossings()
    beta = crossings["mean"]
    assert np.all(np.abs(beta / theory.ISING_BETA_C - 1) < 0.01), beta.values


def test_gpu_int8_and_multispin_agree_statistically():
    kw = dict(L=32, beta=[0.42, float(theory.ISING_BETA_C)], sweeps=10_000, thermalization=2_000, realizations=128,
              bins=4, start="cold", backend="cuda", progress=False)
    ms, i8 = ge.ising(kernel="multispin", seed=6, **kw), ge.ising(kernel="int8", seed=6, **kw)
    for name in ("energy", "magnetization", "specific_heat", "acceptance"):
        a, b = getattr(ms.ising, name)(), getattr(i8.ising, name)()
        assert np.all(np.abs(z_score(a["mean"], a["stderr"], b["mean"], b["stderr"])) < 4), name


def test_gpu_same_seed_same_result_any_chunking():
    kw = dict(L=[16, 128], beta=np.linspace(0.4, 0.46, 5), sweeps=200, realizations=20, seed=9, backend="cuda",
              progress=False)
    whole = ge.ising(**kw)
    chunked = ge.ising(chunks=1, **kw).compute()
    for name in whole.data_vars:
        np.testing.assert_array_equal(chunked[name].values, whole[name].values)


def test_gpu_launched_sweeps_convert_their_arguments_once(monkeypatch):
    # The launched path launches through prepared_launch: arguments converted once (numba-cuda's
    # own launch converts all 16 at every half-sweep, ~50 us of host time). It must take that
    # path on this numba-cuda, give the dispatcher's numbers bit for bit, and warn about nothing.
    from gpuensembles.core import backend

    launches = []
    prepare = backend.prepared_launch

    def recorded(*args, **kwargs):
        launches.append(prepare(*args, **kwargs))
        return launches[-1]

    monkeypatch.setattr(lattices, "prepared_launch", recorded)
    monkeypatch.setattr(lattices, "RESIDENT_MAX_L", 0)
    kw = dict(L=[8, 200], beta=[0.3, 0.44], sweeps=30, thermalization=5, measure_every=3, realizations=40, seed=3,
              backend="cuda", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # 5 sweeps of thermalization leave the chains drifting, which the run rightly says
        warnings.filterwarnings("ignore", message=".*still drifting after the thermalization", category=RuntimeWarning)
        prepared = ge.ising(**kw)
    assert launches and all(go.prepared for go in launches)
    monkeypatch.setattr(backend, "PREPARED_LAUNCHES", False)
    through_dispatcher = ge.ising(**kw)
    assert not launches[-1].prepared
    for name in prepared.data_vars:
        np.testing.assert_array_equal(prepared[name].values, through_dispatcher[name].values, err_msg=name)


@pytest.mark.filterwarnings("ignore:.*Grid size")  # numba-cuda on the tiny grid of a test-sized baseline
def test_randomness_bound_draws_the_kernels_random_words():
    # The benchmark's bound must draw what the multi-spin kernel draws for each word: the two
    # Philox blocks of its counters (half-sweep, site, group 0, block) and keys.
    from benchmarks import baselines
    from gpuensembles.models.ising import physics

    L, half_sweeps = 128, 2
    launch = baselines.philox_bound_launcher(L, half_sweeps=half_sweeps, items_per_thread=3)
    work, seconds = launch()  # half-sweeps 2 (colour 0) and 3 (colour 1), from zeros
    assert work == half_sweeps * L * L // 2 and seconds > 0
    words = launch.lattice.copy_to_host().reshape(2, -1)
    key = physics.philox_key(L, physics.TAG_MULTISPIN)
    for colour in range(2):
        for site in (0, 1, 95, words.shape[1] - 1):
            expected = 0
            for block in range(2):
                for w in physics.philox4x32(np.uint32(2 + colour), np.uint32(site), np.uint32(0), np.int64(block),
                                            np.uint32(1), key):
                    expected ^= int(w)
            assert int(words[colour, site]) == expected, (colour, site)
