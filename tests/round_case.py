"""One round of the rounds template, run by the CPU tests and under the CUDA simulator alike."""

import numpy as np


def trial_round(backend, sizes=(12, 5, 24)):
    """Rounds of the rounds template on one runner: given starts and thermal ones, windows hit on both sides.

    Round ``k`` runs the first ``sizes[k]`` trials (a runner keeps its device arrays: the rounds shrink
    and grow them); a trial's result depends on its id alone, so a row is the same in every round.
    """
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    n = max(sizes)
    params = np.array([[1.0, 0.3, 0.5, 0.3, 0.01], [1.0, 1.0, 0.2, 0.5, 0.02]])
    rows = np.arange(n) % 2
    # the underdamped coordinate is the energy above the well bottom: 0.17 and 0.42 at (1.2, 0.1)
    starts = np.where(np.arange(n)[:, None] % 3 == 0, np.nan, np.array([[1.2, 0.1]]))
    lo, hi = np.full(n, 0.1), np.full(n, 0.5)
    streams, trials = rows.astype(np.uint32), np.arange(n, dtype=np.int64) + 2**40
    rounds = []
    for m in sizes:
        steps, status, ends = np.empty(m, np.int64), np.empty(m, np.int8), np.empty((m, 3))
        run(params, rows[:m], starts[:m], lo[:m], hi[:m], streams[:m], trials[:m], 7, 2000, steps, status, ends)
        rounds.append({"steps": steps.tolist(), "status": status.tolist(), "ends": ends.tolist()})
    return rounds


def run_round(backend):
    """One round of the running state's trials: escaped states that run three more wells, and ones that relax."""
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import running_physics

    run = trial_runner(running_physics.run_trial_kernel("float64", "baoab"), backend)
    n = 8
    params = np.array([[1.0, 0.3, 0.5, 0.09, 0.05], [1.0, 0.3, 0.3, 0.03, 0.05]])
    rows = np.arange(n) % 2
    bottom = np.arcsin(params[rows, 2])
    # fast starts run on (the second row's well is below I_r ~ 0.37 and cold: they are retrapped later), slow ones
    # relax at once; start rows are (phi, v, wells advanced)
    starts = np.column_stack([bottom, np.where(np.arange(n) < 4, 3.0, 0.2), np.ones(n)])
    lo, hi = np.zeros(n), np.full(n, 4.0)
    streams, trials = rows.astype(np.uint32), np.arange(n, dtype=np.int64) + 2**41
    steps, status, ends = np.empty(n, np.int64), np.empty(n, np.int8), np.empty((n, 4))
    run(params, rows, starts, lo, hi, streams, trials, 9, 20_000, steps, status, ends)
    return {"steps": steps.tolist(), "status": status.tolist(), "ends": ends.tolist()}
