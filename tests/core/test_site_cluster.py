"""A cluster the way a site runs one: ``dask scheduler`` and ``dask worker`` as separate processes.

The scheduler and two worker processes (two threads each, under a nanny) start from the
shell commands a site uses, and meet through a scheduler file, as on several nodes. Run
functions then give the numbers of the eager run. A worker process killed with ``kill -9``
while it runs tasks (rates and Ising) is restarted by its nanny, the scheduler runs its
tasks again, and no number of the result changes.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpuensembles as ge

distributed = pytest.importorskip("distributed")

CALLS = {
    "escape_times": lambda: ge.escape_times(damping=1.0, gamma=0.5, h=0.01, model="overdamped", D=[0.3, 0.5],
                                            realizations=256, seed=7, backend="cpu", progress=False).steps,
    "escape_rates": lambda: ge.escape_rates(model="overdamped", damping=1.0, D=0.05, h=0.01,
                                            gamma=np.linspace(0.2, 0.6, 12), rel_error=0.1, seed=3, backend="cpu",
                                            progress=False).rate,
    "ising": lambda: ge.ising(L=[16, 32], beta=[0.4, 0.44], sweeps=3000, thermalization=1000, realizations=128, seed=5,
                              backend="cpu", progress=False).bin_e,
}


def _dask_command(*args) -> list:
    return [sys.executable, "-c", "import sys; from dask.__main__ import main; sys.exit(main())", *args]


@pytest.fixture(scope="module")
def eager():
    """The references, computed before any client exists (they also fill the kernel cache)."""
    with _quiet():
        return {name: call().values for name, call in CALLS.items()}


class _quiet:
    """Ignore RuntimeWarnings inside (Ising's short thermalization; not what is tested here)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)


@pytest.fixture(scope="module")
def site(eager, tmp_path_factory):
    """A scheduler and two worker processes, started as separate commands; yields a client."""
    folder = tmp_path_factory.mktemp("site")
    scheduler_file = folder / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    log = open(folder / "log", "w")  # noqa: SIM115 (closed at teardown)
    processes = [subprocess.Popen(_dask_command("scheduler", "--scheduler-file", str(scheduler_file), "--port", "0",
                                                "--no-dashboard"), env=env, stdout=log, stderr=log)]
    deadline = time.time() + 120
    while not scheduler_file.exists() and time.time() < deadline:
        time.sleep(0.1)
    processes.append(subprocess.Popen(_dask_command("worker", "--scheduler-file", str(scheduler_file), "--nworkers",
                                                    "2", "--nthreads", "2", "--no-dashboard"),
                                      env=env, stdout=log, stderr=log))
    try:
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=120) as client:
            client.wait_for_workers(2, timeout=120)
            yield client
    finally:
        for proc in reversed(processes):
            proc.send_signal(signal.SIGINT)
        for proc in reversed(processes):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_separate_processes_give_the_eager_numbers(name, eager, site):
    with _quiet():
        lazy = CALLS[name]()
    assert lazy.chunks is not None  # the client made it lazy: the workers ran it
    np.testing.assert_array_equal(lazy.values, eager[name])


@pytest.mark.parametrize("name", ["escape_rates", "ising"])
def test_a_worker_killed_mid_run_changes_no_number(name, eager, site):
    with _quiet():
        future = site.compute(CALLS[name]())
    deadline = time.time() + 120
    while not any(site.processing().values()) and time.time() < deadline:
        time.sleep(0.01)
    busy = next(address for address, tasks in site.processing().items() if tasks)
    victim = site.run(os.getpid, workers=[busy])[busy]
    assert future.status == "pending"
    os.kill(victim, signal.SIGKILL)  # its nanny starts a new worker; the scheduler reruns its tasks
    values = future.result(timeout=600)
    site.wait_for_workers(2, timeout=120)
    assert victim not in site.run(os.getpid).values()  # the worker was replaced
    np.testing.assert_array_equal(values.values, eager[name])
