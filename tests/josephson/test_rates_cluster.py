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
    assert lazy.rate.data.numblocks == (GAMMA.size,)  # one task per bias point
    computed = lazy.compute()
    for name in ("rate", "rate_stderr", "steps"):
        np.testing.assert_array_equal(computed[name].values, eager[0][name].values)


def test_switching_from_rates_on_a_cluster_is_the_eager_run(eager, client):
    remote = ge.switching_currents(**SWITCHING).compute()
    np.testing.assert_array_equal(remote.rate_gamma.values, eager[1].rate_gamma.values)  # the same adaptive grid
    for name in eager[1].data_vars:
        np.testing.assert_array_equal(remote[name].values, eager[1][name].values, err_msg=name)


def test_points_per_task():
    assert rates._points_per_task({}, 4) == {}
    assert rates._points_per_task({"gamma": 32}, 4) == {"gamma": 1}
    assert rates._points_per_task({"D": 3, "gamma": 32}, 4) == {"D": 1, "gamma": 1}
    assert rates._points_per_task({"gamma": 10 * rates.POINTS_PER_WORKER}, 2) == {"gamma": 5}
