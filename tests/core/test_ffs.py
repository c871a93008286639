"""The rate estimators of core.ffs on a process with a known answer (no model, no kernel)."""

import math

import numpy as np

from gpuensembles.core import ffs
from gpuensembles.core.templates.rounds import CENSORED, REACHED


class ExponentialRounds(ffs.Rounds):
    """Trials whose passage steps are exponential with rate ``RATE`` per step, censored at ``max_steps``."""

    RATE = 1e-3

    def __init__(self, n_points, max_steps):
        super().__init__(run=None, table=np.zeros((n_points, 1)), streams=np.arange(n_points, dtype=np.uint32),
                         seed=0, width=2, max_steps=max_steps)

    def __call__(self, points, counts, pools, lo, hi, first_ids):
        ids = np.concatenate([first + np.arange(n) for first, n in zip(first_ids, counts)])
        points = np.repeat(points, counts)
        u = np.array([np.random.default_rng(int(i)).random() for i in ids % 2**36 + 10**6 * np.asarray(points)])
        steps = np.ceil(-np.log1p(-u) / self.RATE).astype(np.int64)
        status = np.where(steps > self.max_steps, CENSORED, REACHED).astype(np.int8)
        steps = np.minimum(steps, self.max_steps)
        np.add.at(self.steps, points, steps)
        return steps, status, np.zeros((len(points), self.width))


def test_direct_rate_handles_censoring():
    # half the trials censored: 1 / mean(t) would be far off, the MLE is not
    n = 4000
    rounds = ExponentialRounds(2, max_steps=round(math.log(2) / ExponentialRounds.RATE))
    rate, stderr, censored, passages = ffs.direct_rates(rounds, np.zeros(2), np.array([1.0, 0.5]), n)
    assert np.all(np.abs(censored / n - 0.5) < 4 * math.sqrt(0.25 / n))
    expected = ExponentialRounds.RATE / np.array([1.0, 0.5])
    assert np.all(np.abs(rate - expected) <= 4 * stderr)
    # the delta-method error is that of the exponential MLE, rate / sqrt(passages)
    np.testing.assert_allclose(stderr, rate / np.sqrt(n - censored), rtol=0.1)
    assert rounds.steps.sum() > 0
    # the end states of the trials that passed, per point, for a further round
    assert [len(p) for p in passages] == list(n - censored)


def test_trial_ids_name_the_round_and_never_collide():
    ids = {int(ffs.trial_id(kind, stage, batch, i)) for kind in range(4) for stage in (0, 1, 1023)
           for batch in (0, 4095) for i in (0, 2**36 - 1)}
    assert len(ids) == 4 * 3 * 2 * 2
    assert max(ids) < 2**63


def test_joined_pools_are_the_rows_in_order_and_a_view_only_where_they_lie_so():
    kept = np.empty((20, 2))  # a stage's kept states, split per replica (one died out: empty)
    kept[:] = np.arange(40.0).reshape(20, 2)
    pools = np.split(kept, [3, 3, 9, 15])
    for chosen, view in (([0, 1, 2, 3, 4], True), ([2, 3], True), ([0, 2], True), ([3, 2], False),
                         ([0, 3], False)):
        parts = [pools[i] for i in chosen]
        joined = ffs._joined(parts, 2)
        np.testing.assert_array_equal(joined, np.concatenate(parts))
        assert np.shares_memory(joined, kept) == view, chosen
    assert ffs._joined([np.zeros((0, 2))], 2).shape == (0, 2)


def test_pilots_join_only_the_rows_they_start_from():
    pools = [np.arange(6.0).reshape(3, 2), np.zeros((0, 2)), np.arange(6.0, 16.0).reshape(5, 2)]
    everything = np.concatenate(pools)
    for n in (1, 3, 5, 8, 20):
        rows = ffs._leading_rows(pools, n)
        # trial j of n starts from row j mod len(pool): the same rows as from the whole pool
        np.testing.assert_array_equal(rows[np.arange(n) % len(rows)], everything[np.arange(n) % len(everything)])
        assert len(rows) == min(n, len(everything))
