"""The rates path with an active ``distributed.Client``: the points spread over the workers, same numbers.

A local cluster of two workers of two threads each (in this process: the tasks run in
worker threads, as on a dask-cuda worker). ``switching_currents(method="rates")`` measures its
adaptive bias grid in rounds; each round's rates are computed on the cluster before the next
round is chosen, so the grid and the samples must be those of the eager run.
"""

import numpy as np
import pytest

import gpuensembles as ge
from gpuensembles.models.josephson import rates

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

RATES = dict(model="overdamped", damping=1.0, D=0.05, h=0.01, rel_error=0.1, seed=3, backend="cpu", progress=False)
SWITCHING = dict(RATES, dgamma=1e-8, realizations=200, method="rates")


GAMMA = np.linspace(0.2, 0.6, 5)


@pytest.fixture(scope="module")
def eager():
    """The references, run before any client exists."""
    return ge.escape_rates(gamma=GAMMA, **RATES), ge.switching_currents(**SWITCHING)


@pytest.fixture(scope="module")
def client(eager):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as active:
        yield active


def test_escape_rates_spread_one_point_per_task_and_match_the_eager_run(eager, client):
    lazy = ge.escape_rates(gamma=GAMMA, **RATES)
    assert isinstance(lazy.rate.data, da.Array)
    computed = lazy.compute()
    for name in ("rate", "rate_stderr", "steps"):
        np.testing.assert_array_equal(computed[name].values, eager[0][name].values)


def test_switching_from_rates_on_a_cluster_is_the_eager_run(eager, client):
    remote = ge.switching_currents(**SWITCHING).compute()
    np.testing.assert_array_equal(remote.rate_gamma.values, eager[1].rate_gamma.values)  # the same adaptive grid
    for name in eager[1].data_vars:
        np.testing.assert_array_equal(remote[name].values, eager[1][name].values, err_msg=name)


def test_a_pass_on_a_cluster_simulates_each_point_once(eager, client, monkeypatch):
    # each pass's rates were computed once for every variable read from the lazy result
    points = []
    run_points = rates._run_points

    def counted(plan, chosen, settings, show=False):
        points.extend(np.asarray(chosen).tolist())
        return run_points(plan, chosen, settings, show)

    monkeypatch.setattr(rates, "_run_points", counted)
    remote = ge.switching_currents(**SWITCHING).compute()
    assert len(points) == remote.sizes["rate_gamma"] > 0


def test_points_go_to_tasks_without_inputs(eager, client):
    lazy = ge.escape_rates(gamma=GAMMA, **RATES)
    graph = lazy.rate.data.__dask_graph__()
    tasks = [key for key in dict(graph) if str(key[0]).startswith("_dealt_block")]
    # two workers: TASKS_PER_WORKER tasks each (two: 4 tasks for the 5 points), never more than the points
    assert len(tasks) == min(GAMMA.size, rates.TASKS_PER_WORKER * len(client.nthreads())) > 1
    depends = graph.get_all_dependencies()
    assert all(not depends[key] for key in tasks)  # nothing made elsewhere draws them to one worker


def test_shares_balance_the_costs_costliest_first():
    costs = np.array([1.0, 8.0, 2.0, 7.0, 3.0, 3.0, 4.0, 0.5])
    shares = rates._shares(costs, 3)
    assert sorted(np.concatenate(shares).tolist()) == list(range(costs.size))  # every point once
    totals = [costs[s].sum() for s in shares]
    assert totals == sorted(totals, reverse=True)
    assert max(totals) - min(totals) <= 1.0  # 10.0, 9.5 and 9.0 (dealt in turn by index: 12.0, 11.5 and 5.0)
    assert rates._shares(costs, 20) == [np.array([i]) for i in np.argsort(-costs, kind="stable")]


def test_spread_points_come_back_in_order(monkeypatch):
    seen = []

    def block(index, plan, settings):
        seen.append(index.tolist())
        return np.repeat(index[:, None].astype(float), len(rates._VARIABLES), axis=1)

    monkeypatch.setattr(rates, "_block", block)
    costs = np.arange(10.0)
    rows = rates._spread(None, (2, 5), None, costs, tasks=3).compute(scheduler="sync")
    np.testing.assert_array_equal(rows[..., 0], np.arange(10).reshape(2, 5))
    assert sorted(map(sorted, seen)) == sorted(map(sorted, (s.tolist() for s in rates._shares(costs, 3))))
