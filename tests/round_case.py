"""One round of the rounds template, run by the CPU tests and under the CUDA simulator alike."""

import numpy as np


def _first(segments, m):
    """The segments cut to their first ``m`` trials in all."""
    cut, left = [], m
    for s in segments:
        if left > 0:
            cut.append((*s[:-1], min(s[-1], left)))
            left -= s[-1]
    return cut


def _run(run, params, segments, seed, max_steps, width):
    """One round of ``(row, pool, lo, hi, first_id, count)`` segments through ``core.ffs.Rounds``, whole and kept."""
    from gpuensembles.core.ffs import Rounds

    rounds = Rounds(run, params, np.arange(len(params), dtype=np.uint32), seed, width, max_steps)
    rows, pools, lo, hi, first_ids, counts = zip(*segments)
    pools = [np.asarray(pool, dtype=float) for pool in pools]
    steps, status, ends = rounds(rows, counts, pools, lo, hi, first_ids)
    # the same round reduced by the runner (on a GPU, on the device): totals per segment, reached states
    totals, kept = rounds.kept(rows, counts, pools, lo, hi, first_ids)
    return {"steps": steps.tolist(), "status": status.tolist(), "ends": ends.tolist(), "totals": totals.tolist(),
            "kept": np.asarray(kept).tolist()}


def trial_round(backend, sizes=(12, 5, 24)):
    """Rounds of the rounds template on one runner: given starts and thermal ones, windows hit on both sides.

    Round ``k`` runs the first ``sizes[k]`` trials (a runner keeps its device arrays: the rounds shrink
    and grow them); a trial's result depends on its id alone, so a row is the same in every round.
    Four segments over two parameter rows: thermal starts, given ones, and a pool of both that
    trials take in turn (``j mod 2``), with ids that do not start at 0.
    """
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    params = np.array([[1.0, 0.3, 0.5, 0.3, 0.01], [1.0, 1.0, 0.2, 0.5, 0.02]])
    # the underdamped coordinate is the energy above the well bottom: 0.17 and 0.42 at (1.2, 0.1)
    thermal, given = [[np.nan, np.nan]], [[1.2, 0.1]]
    segments = [(0, thermal, 0.1, 0.5, 2**40, 5), (1, given + thermal, 0.1, 0.5, 2**40 + 7, 8),
                (0, given, 0.1, 0.5, 2**40 + 100, 7), (1, thermal, 0.1, 0.5, 2**40 + 5, 4)]
    return [_run(run, params, _first(segments, m), 7, 2000, 3) for m in sizes]


def pruned_round(backend):
    """A kept round whose falling trials are pruned at three levels: totals, kept states (copies included), steps."""
    from gpuensembles.core.ffs import Rounds
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    params = np.array([[1.0, 0.3, 0.5, 0.3, 0.01], [1.0, 1.0, 0.2, 0.5, 0.02]])
    rounds = Rounds(run, params, np.array([2, 5], dtype=np.uint32), 13, 3, 10**6)
    # from 0.42 above the well bottom (row 1) and from the thermal state (row 0), to 1.0 and 0.5
    totals, kept = rounds.kept([1, 0], [96, 32], [np.array([[1.2, 0.1]]), np.array([[np.nan, np.nan]])],
                               [0.05, 0.02], [1.0, 0.5], [2**40, 2**41], [[0.35, 0.25, 0.15], [0.04]])
    return {"totals": totals.tolist(), "kept": np.asarray(kept).tolist(), "steps": rounds.steps.tolist()}


def weighted_successes(backend, ladder, first_id, n):
    """``n`` trials from 0.42 above the well bottom to 0.8 or back to 0.05, pruned at ``ladder``.

    Returns per trial its count among the successes (``2**levels``, 0 for a failure), its
    steps and the pruning levels it survived.
    """
    from gpuensembles.core.ffs import Rounds
    from gpuensembles.core.templates.rounds import REACHED, trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    params = np.array([[1.0, 1.0, 0.2, 0.5, 0.02]])
    rounds = Rounds(run, params, np.array([8], dtype=np.uint32), 11, 3, 10**6)
    _, _, (segments, windows, pool) = rounds._round([0], [n], [np.array([[1.2, 0.1]])], [0.05], [0.8], [first_id],
                                                    [ladder])
    steps, status, ends, levels = np.empty(n, np.int64), np.empty(n, np.int8), np.empty((n, 3)), np.empty(n, np.int8)
    run(params, segments, windows, pool, 11, 10**6, steps, status, ends, levels)
    return np.where(status == REACHED, 2.0 ** levels, 0.0), steps, levels


def run_round(backend):
    """One round of the running state's trials: escaped states that run three more wells, and ones that relax."""
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import running_physics

    run = trial_runner(running_physics.run_trial_kernel("float64", "baoab"), backend)
    params = np.array([[1.0, 0.3, 0.5, 0.09, 0.05], [1.0, 0.3, 0.3, 0.03, 0.05]])
    bottom = np.arcsin(params[:, 2])
    # fast starts run on (the second row's well is below I_r ~ 0.37 and cold: they are retrapped later), slow ones
    # relax at once; start rows are (phi, v, wells advanced)
    segments = [(row, [[bottom[row], v, 1.0]], 0.0, 4.0, 2**41 + 4 * k, 2)
                for k, (row, v) in enumerate([(0, 3.0), (1, 3.0), (0, 0.2), (1, 0.2)])]
    return _run(run, params, segments, 9, 20_000, 4)


def flux_chain(backend):
    """Forward flux sampling on one runner: two points, two batches, stages started from the last ones' states.

    On a GPU (and the simulator) a stage's kept states stay on the device and the next stage and
    its pilots start from them there: ``device_pools`` counts the rounds that did. The second
    part checks the rule that keeps such rows valid: a kept round writes into the buffer its pool
    is not read from, so rows are readable until a later kept round of their thread writes
    their buffer again, and after that their reading raises.
    """
    from gpuensembles.core import ffs
    from gpuensembles.core.templates import rounds as template
    from gpuensembles.models.josephson import physics

    run = template.trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    # V0, damping, gamma, D, h: barriers of 2.7 and 4.4 theta; the coordinate is the energy above the well bottom
    params = np.array([[1.0, 0.3, 0.5, 0.075, 0.05], [1.0, 0.5, 0.45, 0.09, 0.05]])
    rounds = ffs.Rounds(run, params, np.array([4, 9], dtype=np.uint32), seed=3, width=3, max_steps=10**6)
    settings = ffs.FluxSettings(replicas=2, walkers=3, cycles=1, trials=np.array([10, 12]), pilots=8, p_target=0.3,
                                rel_error=1e-6, max_batches=2)
    pools, joined = [], ffs._pool

    def spy(given, sizes, columns):
        pool, firsts = joined(given, sizes, columns)
        pools.append(isinstance(pool, template._KeptBuffer))
        return pool, firsts

    ffs._pool = spy
    try:
        out = ffs.forward_flux(rounds, np.array([0.25, 0.3]), np.array([0.45, 0.5]), np.array([1.2, 1.4]),
                               params[:, 4], settings)
    finally:
        ffs._pool = joined
    result = {"rate": out["rate"].tolist(), "interfaces": out["interfaces"].tolist(), "steps": rounds.steps.tolist(),
              "ends": [[np.asarray(e).tolist() for e in ends] for ends in out["ends"]],
              "device_pools": sum(pools)}
    # the validity of kept rows: three kept rounds, the third started from the second's states
    start = [np.array([[1.2, 0.1]])]  # (phi, v): 0.17 above the first well's bottom
    one = rounds.kept([0], [12], start, [0.1], [0.5], [2**40])[1]
    two = rounds.kept([0], [12], start, [0.1], [0.5], [2**40 + 100])[1]
    three = rounds.kept([0], [12], [two], [0.1], [0.6], [2**40 + 200])[1]
    assert len(one) and len(two) and len(three)
    result["validity"] = [_readable(rows) for rows in (one, two, three)]
    return result


def _readable(rows) -> bool:
    try:
        np.asarray(rows)
    except RuntimeError as error:
        assert "written again" in str(error)
        return False
    return True
