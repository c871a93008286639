"""Parameter broadcasting, chunking, laziness and determinism (CPU backend)."""

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.core import engine

from .. import raise_if_dask_computes

CASE = dict(damping=1.0, gamma=0.5, h=0.01, model="overdamped", backend="cpu", max_steps=200_000)


def run(**kw):
    return ge.escape_times(**{**CASE, "D": [0.3, 0.5], "realizations": 40, "seed": 7, **kw})


@pytest.fixture(scope="module")
def reference():
    return run()


def test_eager_by_default(reference):
    assert isinstance(reference.steps.data, np.ndarray)
    assert reference.steps.dims == ("D", "realization")
    assert reference.escaped.all()


@pytest.mark.parametrize("chunks", [1, 7, 40, {"realization": 13, "D": 1}, {"D": 1}])
def test_same_seed_same_steps_for_any_chunking(reference, chunks):
    lazy = run(chunks=chunks)
    assert isinstance(lazy.steps.data, da.Array)
    np.testing.assert_array_equal(lazy.steps.values, reference.steps.values)
    xr.testing.assert_identical(lazy.escaped.compute(), reference.escaped)


def test_dask_result_is_lazy_until_computed():
    with raise_if_dask_computes():
        ds = run(chunks=10)
        stats = ds.fpt.mean()
        survival = ds.fpt.survival(t=np.linspace(0, 50, 11))
    assert stats["mean"].chunks is not None and survival.chunks is not None
    with raise_if_dask_computes(max_computes=1):
        stats.compute()


def test_realization_subset_is_reproducible(reference):
    # realization r has the same numbers whatever the ensemble size around it
    small = run(realizations=9)
    np.testing.assert_array_equal(small.steps.values, reference.steps.values[:, :9])


def test_different_seeds_give_different_streams(reference):
    other = run(seed=8)
    assert (other.steps.values != reference.steps.values).mean() > 0.9


def test_points_use_different_streams():
    ds = run(D=[0.4], V0=[1.0, 1.0 + 1e-12])  # physically identical points, separate streams
    a, b = ds.steps.isel(V0=0).values, ds.steps.isel(V0=1).values
    assert (a != b).mean() > 0.9


def test_worker_count_does_not_matter(reference):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            ds = run()  # an active client makes the result lazy, chunked over workers
            assert isinstance(ds.steps.data, da.Array)
            assert ds.steps.data.numblocks[-1] > 1
            np.testing.assert_array_equal(ds.steps.values, reference.steps.values)


def _counting_block(start, stop):
    return {"x": np.arange(start, stop)}


def _dependencies(task) -> set:
    return set(dask.core.get_dependencies(dict(task.dask), task.key))


def test_chained_runs_follow_the_last_task_of_each_chain():
    chains, outputs = engine.Chains(), {"x": engine.Output((4,), np.int64, 0)}
    engine.run_realizations(_counting_block, 4, outputs, chunks=2, chains=chains, progress=False)
    first = dict(chains.ends)
    wider = {"x": engine.Output((6,), np.int64, 0)}
    second = engine.run_realizations(_counting_block, 6, wider, chunks=2, chains=chains, progress=False)
    ends = dict(chains.ends)
    assert sorted(first) == [0, 1] and sorted(ends) == [0, 1, 2]
    followed = [_dependencies(ends[c]) for c in range(3)]
    assert followed == [{first[0].key}, {first[1].key}, set()]  # a third task starts a chain of its own
    np.testing.assert_array_equal(second["x"].compute(), np.arange(6))
    engine.run_realizations(_counting_block, 2, {"x": engine.Output((2,), np.int64, 0)}, chunks=2, chains=chains,
                            progress=False)
    assert _dependencies(chains.ends[0]) == {ends[0].key}  # a run of fewer tasks extends the first chains only
    assert [chains.ends[c].key for c in (1, 2)] == [ends[c].key for c in (1, 2)]


def test_balanced_chains_cut_all_runs_into_shares_of_equal_cost():
    shares = engine.Chains.balanced([(8, 2.0), (256, 4.0), (256, 16.0)], 4)
    runs = [shares.next_shares(n) for n in (8, 256, 256)]
    for run, n in zip(runs, (8, 256, 256)):  # each run's tasks tile its items
        assert run[0][0] == 0 and run[-1][1] == n and all(a[1] == b[0] for a, b in zip(run, run[1:]))
    cost = np.zeros(4)
    for run, item_cost in zip(runs, (2.0, 4.0, 16.0)):
        for lo, hi, chain in run:
            cost[chain] += (hi - lo) * item_cost
    assert cost.max() - cost.min() <= 2 * 16.0  # equal to within an item at each cut
    assert [len(run) for run in runs] == [1, 1, 4]  # the small runs stay whole, on one chain
    with pytest.raises(RuntimeError, match="do not tile"):
        engine.Chains.balanced([(4, 1.0)], 2).next_shares(5)
    with pytest.raises(RuntimeError, match="more than"):
        engine.Chains.balanced([], 2).next_shares(1)


def test_eager_runs_take_no_share_so_their_order_does_not_matter():
    # eager GPU runs of several sizes start on threads of their own (engine.run_together) and reach
    # run_realizations in any order: the GPU's first README Ising call failed so ("do not tile")
    chains = engine.Chains.balanced([(5, 1.0), (160, 1.0)], 1)
    for n in (160, 5):
        x = engine.run_realizations(_counting_block, n, {"x": engine.Output((n,), np.int64, 0)}, chains=chains,
                                    progress=False)["x"]
        np.testing.assert_array_equal(x, np.arange(n))


def test_balanced_chains_deal_the_runs_of_a_cluster():
    distributed = pytest.importorskip("distributed")
    chains = engine.Chains.balanced([(6, 1.0), (10, 1.0)], 2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        runs = [engine.run_realizations(_counting_block, n, {"x": engine.Output((n,), np.int64, 0)}, chains=chains,
                                        progress=False)["x"] for n in (6, 10)]
        assert [r.chunks[0] for r in runs] == [(6,), (2, 8)]  # shares of 8 items each: 6 + 2 and 8
        first_run_task = _dependencies(chains.ends[0])
        assert len(first_run_task) == 1 and _dependencies(chains.ends[1]) == set()  # 2 items follow the 6
        for r, n in zip(runs, (6, 10)):
            np.testing.assert_array_equal(r.compute(), np.arange(n))


def test_array_parameters_become_dimensions_scalars_attrs(reference):
    assert list(reference.D.values) == [0.3, 0.5]
    assert reference.D.attrs["long_name"].startswith("noise intensity")
    for name in ("damping", "gamma", "h", "V0"):
        assert name not in reference.dims
        assert name in reference.attrs


def test_two_dimensional_sweep_order_and_shape():
    ds = ge.escape_times(**{**CASE, "D": [0.3, 0.5, 0.7], "gamma": [0.4, 0.5], "realizations": 5, "seed": 1})
    assert ds.steps.dims == ("gamma", "D", "realization")
    assert ds.steps.shape == (2, 3, 5)


def test_shared_dimension_zips_parameters():
    case = xr.DataArray([0.3, 0.5], dims="case")
    ds = ge.escape_times(**{**CASE, "D": case, "gamma": xr.DataArray([0.4, 0.5], dims="case"), "realizations": 4,
                            "seed": 1})
    assert ds.steps.dims == ("case", "realization")
    assert ds.D.dims == ("case",) and list(ds.gamma.values) == [0.4, 0.5]
    # a point of the zipped sweep equals the same point run alone with the same stream index
    alone = ge.escape_times(**{**CASE, "D": [0.3, 0.9], "gamma": 0.4, "realizations": 4, "seed": 1})
    np.testing.assert_array_equal(ds.steps.values[0], alone.steps.values[0])


def test_history_and_provenance(reference):
    attrs = reference.attrs
    for key in ("gpuensembles_version", "model", "integrator", "seed", "rng", "backend", "device", "history", "dtype"):
        assert key in attrs
    assert attrs["seed"] == 7 and attrs["backend"] == "cpu"
    assert "escape_times(" in attrs["history"] and "seed=7" in attrs["history"]
    assert reference.realization.attrs["standard_name"] == "realization"
    assert reference.realization.attrs["axis"] == "E"


def test_seed_is_drawn_and_recorded_when_omitted():
    ds = ge.escape_times(**{**CASE, "D": 0.5, "realizations": 3})
    again = ge.escape_times(**{**CASE, "D": 0.5, "realizations": 3, "seed": int(ds.attrs["seed"])})
    np.testing.assert_array_equal(ds.steps.values, again.steps.values)


def test_normalize_chunks_splits_with_remainder(reference):
    plan = engine.make_plan(
        {"D": engine.as_parameter("D", [0.3, 0.5])}, realizations=10, seed=1, max_steps=10,
        kernel=None, backend="cpu",
    )
    assert engine.normalize_chunks(plan, 4) == ((2,), (4, 4, 2))
    assert engine.normalize_chunks(plan, {"D": 1, "realization": 20}) == ((1, 1), (10,))


def test_run_together_runs_the_calls_at_once_in_order_and_starts_once():
    import threading

    from gpuensembles.core import progress

    meet = threading.Barrier(3, timeout=30)  # passed only when all three calls run at once
    started = []

    def call(i):
        progress.starting()
        meet.wait()
        return i

    with progress.on_start(lambda: started.append(threading.get_ident())):
        assert engine.run_together([lambda i=i: call(i) for i in range(3)], True) == [0, 1, 2]
    assert len(started) == 1 and started[0] != threading.get_ident()  # once, from a call's thread
    assert engine.run_together([threading.get_ident] * 2, False) == [threading.get_ident()] * 2
    with pytest.raises(ZeroDivisionError):
        engine.run_together([lambda: 1, lambda: 1 / 0], True)
