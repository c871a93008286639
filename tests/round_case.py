"""One round of the rounds template, run by the CPU tests and under the CUDA simulator alike."""

import numpy as np


def trial_round(backend):
    """One round of the rounds template: given starts and thermal ones, windows hit on both sides."""
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), backend)
    n = 12
    params = np.array([[1.0, 0.3, 0.5, 0.3, 0.01], [1.0, 1.0, 0.2, 0.5, 0.02]])
    rows = np.arange(n) % 2
    # the underdamped coordinate is the energy above the well bottom: 0.17 and 0.42 at (1.2, 0.1)
    starts = np.where(np.arange(n)[:, None] % 3 == 0, np.nan, np.array([[1.2, 0.1]]))
    lo, hi = np.full(n, 0.1), np.full(n, 0.5)
    streams, trials = rows.astype(np.uint32), np.arange(n, dtype=np.int64) + 2**40
    steps, status, ends = np.empty(n, np.int64), np.empty(n, np.int8), np.empty((n, 3))
    run(params, rows, starts, lo, hi, streams, trials, 7, 2000, steps, status, ends)
    return {"steps": steps.tolist(), "status": status.tolist(), "ends": ends.tolist()}
