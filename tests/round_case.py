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
            "kept": kept.tolist()}


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
