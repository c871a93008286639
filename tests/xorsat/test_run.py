"""The quasi-greedy solver on the CPU backend: exact dynamics, solutions, determinism, TTS law."""

import math

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.core import rng
from gpuensembles.models.xorsat import physics as quasi_greedy
from gpuensembles.models.xorsat import run as solver


@pytest.fixture(scope="module")
def small():
    return ge.xorsat.random_instance(24, seed=4)


def _reference_run(instance, p, clones, seed, sweeps, run=0, instance_index=0, p_index=0):
    """Clone-by-clone quasi-greedy dynamics in plain Python from the documented random-bit
    assignment: clone ``c`` with one unsatisfied triplet draws its own 32-bit uniform ``U``
    (bit ``31 - k`` = bit ``c % 32`` of random word ``k``) and flips when ``U < floor(p 2^32)``.
    Returns the bits ``(sweeps + 1, clones, N)`` after each sweep."""
    triplets = instance["triplets"].values
    parity = instance["parity"].values
    N = triplets.shape[0]
    order, bounds = solver.independent_sets(triplets, N)
    label = np.empty(N, dtype=np.int64)
    label[order] = np.arange(N)
    P, always = quasi_greedy.threshold(p)
    key1 = int(quasi_greedy.key(instance_index, p_index))
    member = [[a for a in range(N) if v in triplets[a]] for v in range(N)]
    history = np.zeros((sweeps + 1, clones, N), dtype=np.uint8)
    for c in range(clones):
        word, lane = divmod(c, 32)
        x = np.array([(rng.philox4x32(quasi_greedy.START_COUNTER, label[v] | (N << 16), word, run, seed, key1)[0]
                       >> lane) & 1 for v in range(N)], dtype=np.uint8)
        history[0, c] = x
        for t in range(sweeps):
            for v in order:  # labels in increasing order
                u = sum(int(x[triplets[a]].sum() % 2 != parity[a]) for a in member[v])
                if u == 1 and not always:
                    words = [w for block in range(8)
                             for w in rng.philox4x32(t, label[v] | (block << 12) | (N << 16), word, run, seed, key1)]
                    U = sum(((int(words[k]) >> lane) & 1) << (31 - k) for k in range(32))
                    flip = U < int(P)
                else:
                    flip = u >= 2 or (u == 1 and always)
                x[v] ^= flip
            history[t + 1, c] = x
    return history


def _unsatisfied(instance, bits):
    tri = instance["triplets"].values
    return (np.bitwise_xor.reduce(bits[..., tri], axis=-1) != instance["parity"].values).sum(axis=-1)


def _check_against_reference(ds, instance, p, clones, seed, timeout, **indices):
    """Every run of ``ds`` (dims ``run`` only) matches :func:`_reference_run`."""
    for run in range(ds.sizes["run"]):
        history = _reference_run(instance, p, clones, seed, timeout, run=run, **indices)
        hits = np.argwhere(_unsatisfied(instance, history) == 0)  # (sweep, clone), sorted by sweep then clone
        got = ds.isel(run=run)
        if len(hits):
            assert bool(got.solved) and (int(got.tts_sweeps), int(got.clone)) == tuple(hits[0])
            np.testing.assert_array_equal(got.solution.values[:instance.sizes["variable"]],
                                          history[hits[0][0], hits[0][1]])
        else:
            assert not bool(got.solved) and int(got.tts_sweeps) == timeout and int(got.clone) == -1


@pytest.mark.parametrize("p, seed", [(0.3, 23), (1.0, 9), (0.0, 9)])
def test_runs_follow_the_reference_dynamics_exactly(small, p, seed):
    # 33 clones: the second word has 31 unused lanes; with seed 23 one of them (clone 40)
    # would be the first solution of run 1 if they were not masked
    ds = ge.xorsat.solve(small, p=p, clones=33, timeout=6, runs=2, seed=seed, backend="cpu", progress=False)
    _check_against_reference(ds, small, p, 33, seed, 6)


def test_instance_and_p_positions_select_the_random_streams():
    stack = ge.xorsat.random_instances(24, count=2, seed=4)
    ds = ge.xorsat.solve(stack, p=[0.1, 0.3], clones=40, timeout=6, runs=2, seed=5, backend="cpu", progress=False)
    assert int(ds.N) == 24 and ds.tts_sweeps.dims == ("p", "instance", "run")  # one size: a scalar coordinate
    one = ge.xorsat.select_instance(stack, instance=1)
    _check_against_reference(ds.isel(p=1, instance=1), one, 0.3, 40, 5, 6, instance_index=1, p_index=1)
    # an instance solved alone gets the streams of its index in the stack
    alone = ge.xorsat.solve(one, p=[0.1, 0.3], clones=40, timeout=6, runs=2, seed=5, backend="cpu", progress=False)
    for name in ("tts_sweeps", "clone", "solution"):
        np.testing.assert_array_equal(alone[name].values, ds[name].isel(instance=1).values)
    # ... also without attrs (a plain isel of the stack: index from the instance coordinate)
    bare = ge.xorsat.solve(stack.isel(instance=1), p=[0.1, 0.3], clones=40, timeout=6, runs=2, seed=5,
                           backend="cpu", progress=False)
    np.testing.assert_array_equal(bare.tts_sweeps.values, alone.tts_sweeps.values)


@pytest.mark.parametrize("N", [24, 128, 512])
def test_independent_sets_partition_the_variables(N):
    triplets = ge.xorsat.random_instance(N, seed=1)["triplets"].values
    order, bounds = solver.independent_sets(triplets, N)
    assert sorted(order.tolist()) == list(range(N)) and bounds[0] == 0 and bounds[-1] == N
    assert np.all(np.diff(bounds) >= 1) and np.all(np.diff(bounds) <= 32)
    which = np.empty(N, dtype=np.int64)
    for s in range(len(bounds) - 1):
        which[order[bounds[s]:bounds[s + 1]]] = s
    sets = which[triplets]  # (triplet, 3): no two variables of a triplet in one set
    assert np.all((sets[:, 0] != sets[:, 1]) & (sets[:, 0] != sets[:, 2]) & (sets[:, 1] != sets[:, 2]))
    with pytest.raises(ValueError, match="size"):
        solver.independent_sets(triplets, N, size=33)


def test_every_reported_solution_satisfies_every_triplet():
    inst = ge.xorsat.random_instances([30, 45], count=3, seed=2)
    ds = ge.xorsat.solve(inst, p=0.2, clones=64, runs=4, seed=1, backend="cpu", progress=False)
    assert ds.solved.all()
    assert ds.tts_sweeps.dims == ("N", "instance", "run")
    for n in ds.N.values:
        for i in ds.instance.values:
            single = ge.xorsat.select_instance(inst, N=n, instance=i)
            bits = ds.solution.sel(N=n, instance=i).values[:, :n]
            assert np.all(_unsatisfied(single, bits) == 0)
            assert np.all(ds.solution.sel(N=n, instance=i).values[:, n:] == 0)


def test_same_seed_same_result_for_any_chunking(small):
    kw = dict(p=[0.1, 0.4], clones=70, runs=5, seed=3, timeout=400, backend="cpu", progress=False)
    eager = ge.xorsat.solve(small, **kw)
    for chunks in (1, 2):
        lazy = ge.xorsat.solve(small, chunks=chunks, **kw)
        for name in ("tts_sweeps", "solved", "clone", "solution"):
            xr.testing.assert_identical(eager[name], lazy[name].compute())
    other = ge.xorsat.solve(small, **(kw | {"seed": 4}))
    assert not np.array_equal(other.tts_sweeps.values, eager.tts_sweeps.values)


def test_a_client_gets_one_task_per_worker_thread(small, monkeypatch):
    distributed = pytest.importorskip("distributed")
    kw = dict(p=[0.1, 0.4], clones=70, runs=5, seed=3, timeout=400, backend="cpu", progress=False)
    eager = ge.xorsat.solve(small, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        lazy = ge.xorsat.solve(small, **kw)
        assert _tasks(lazy) == 4  # 10 items (runs at points) in 4 tasks
        for name in ("tts_sweeps", "solved", "clone", "solution"):
            xr.testing.assert_identical(eager[name], lazy[name].compute())
        monkeypatch.setattr(solver, "TASK_BYTES", 3 * (16 + 24))  # 3 items' results a task at most
        assert _tasks(ge.xorsat.solve(small, **kw)) == 4
        monkeypatch.setattr(solver, "TASK_BYTES", 2 * (16 + 24))
        assert _tasks(ge.xorsat.solve(small, **kw)) == 5


def _tasks(ds) -> int:
    """The tasks that run the solver in the graph of a lazy result."""
    return sum(str(key[0] if isinstance(key, tuple) else key).startswith("_stored")
               for key in ds.tts_sweeps.data.__dask_graph__())


def test_one_run_per_instance_spreads_over_tasks():
    # items are dealt run-major (every instance in turn), so even runs=1 splits over tasks,
    # one per instance and p here, with the eager numbers; and chunks of 3 mix the sizes
    stack = ge.xorsat.random_instances(N=[16, 24], count=3, seed=5)
    kw = dict(p=[0.1, 0.4], clones=70, runs=1, seed=3, timeout=400, backend="cpu", progress=False)
    eager = ge.xorsat.solve(stack, **kw)
    lazy = ge.xorsat.solve(stack, chunks=1, **kw)
    assert math.prod(lazy.tts_sweeps.data.numblocks) == 2 * 2 * 3
    for name in ("tts_sweeps", "solved", "clone", "solution"):
        xr.testing.assert_identical(eager[name], lazy[name].compute())
    kw["runs"] = 4  # chunks of 3 items (runs at points) that cross from one instance and size to the next
    eager, mixed = ge.xorsat.solve(stack, **kw), ge.xorsat.solve(stack, chunks=3, **kw)
    for name in ("tts_sweeps", "solved", "clone", "solution"):
        xr.testing.assert_identical(eager[name], mixed[name].compute())


def test_batches_of_runs_give_the_same_runs(small, monkeypatch):
    kw = dict(p=0.2, clones=64, runs=5, seed=3, timeout=50, backend="cpu", progress=False)
    whole = ge.xorsat.solve(small, **kw)
    monkeypatch.setattr(solver, "BATCH_BYTES", 2 * 4 * 24)  # two runs of two words per runner call
    for name in ("tts_sweeps", "clone", "solution"):
        np.testing.assert_array_equal(ge.xorsat.solve(small, **kw)[name].values, whole[name].values)


@pytest.mark.slow
def test_tts_is_exponential_and_timeouts_recover_tau():
    # 256 runs of 32 clones at N = 72: tau is about 1300 sweeps, far above the few tens of
    # sweeps the clones need to descend from their random start (at N = 60, with tau about
    # 460 sweeps, that delay shows: too few short runs, KS p-value 0.007)
    inst = ge.xorsat.random_instance(72, seed=7)
    full = ge.xorsat.solve(inst, p=0.1, clones=32, runs=256, seed=5, backend="cpu", progress=False)
    assert full.solved.all()
    assert float(full.tts.ks_test(time="sweeps").pvalue) > 0.01
    tau = full.tts.mean(time="sweeps")
    short = ge.xorsat.solve(inst, p=0.1, clones=32, runs=512, timeout=int(tau.tau / 10), seed=6, backend="cpu",
                            progress=False)
    est = short.tts.from_timeouts(time="sweeps")
    assert 10 <= int(est.solved) < 512
    # the two estimates agree within their combined intervals
    assert est.lower <= tau.upper and tau.lower <= est.upper


@pytest.mark.parametrize("kwargs, match", [
    ({"p": 1.5}, "p"), ({"p": -0.1}, "p"), ({"p": np.nan}, "p"), ({"clones": 0}, "clones"),
    ({"runs": 0}, "runs"), ({"timeout": -1}, "timeout"), ({"timeout": solver.MAX_TIMEOUT + 1}, "timeout"),
    ({"p": 0.0}, "timeout"), ({"p": [0.1, 0.0]}, "timeout"), ({"p": 1e-12}, "timeout"), ({"p": 1.0}, "timeout"),
    ({"p": xr.DataArray([0.1, 0.2], dims="T")}, "dimension"), ({"p": [[0.1]]}, "p"),
    ({"clones": 2**32}, "clones"), ({"backend": "tpu"}, "backend"), ({"seed": -1}, "seed"),
])
def test_bad_arguments_raise_before_running(small, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ge.xorsat.solve(small, **({"backend": "cpu"} | kwargs))


def test_results_beyond_the_memory_available_are_refused_before_running(small, monkeypatch):
    from gpuensembles.core import validation

    monkeypatch.setattr(validation, "available_memory", lambda: 2**30)
    monkeypatch.setattr(solver, "_run_items", lambda *a: pytest.fail("ran"))
    # 2**25 runs keep 8 + 8 + 24 bytes each (best, seconds, solution bits): 1.25 GiB
    with pytest.raises(ValueError, match=r"runs=33554432 .* needs about 1.25 GiB of memory, more than the 1 GiB "
                                         r"available"):
        ge.xorsat.solve(small, runs=2**25, clones=64, backend="cpu")
    # a lazy result needs one chunk's worth
    lazy = ge.xorsat.solve(small, runs=2**25, clones=64, chunks=2**20, backend="cpu")
    assert lazy.tts_sweeps.shape == (2**25,)
    # the clones of one run must fit as well: 2**27 words of 24 variables, a progress counter and a result each
    with pytest.raises(ValueError, match=r"clones=4294967295, N=24\) needs about 14 GiB .* use fewer clones"):
        ge.xorsat.solve(small, clones=solver.MAX_CLONES, backend="cpu")


def test_bad_instances_raise(small):
    with pytest.raises(TypeError, match="instances must be an xarray.Dataset"):
        ge.xorsat.solve(small.triplets, backend="cpu")
    broken = small.copy(deep=True)
    broken["triplets"][0, 0] = broken["triplets"][0, 1]
    with pytest.raises(ValueError):
        ge.xorsat.solve(broken, backend="cpu")
    # nullity 1: the 30 parities obey one linear relation; flipping a parity in it leaves no solution
    redundant = ge.xorsat.random_instance(30, seed=4)
    assert redundant.attrs["nullity"] == 1
    flipped = [redundant.copy(deep=True).drop_vars("planted") for _ in range(30)]
    for a, inst in enumerate(flipped):
        inst["parity"][a] ^= 1
    contradictory = [i for i in flipped if not ge.xorsat.satisfiable(i.triplets.values, i.parity.values)]
    assert len(contradictory) >= 3  # the relation involves at least three triplets
    with pytest.raises(ValueError, match="no solution"):
        ge.xorsat.solve(contradictory[0], timeout=5, backend="cpu")
    with pytest.raises(ValueError, match="N <="):
        ge.xorsat.solve(ge.xorsat.random_instance(solver.MAX_N + 3, seed=1), backend="cpu")

