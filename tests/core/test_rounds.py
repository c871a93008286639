"""Rounds given as segments (core.ffs.Rounds over the rounds template, CPU): a trial is its start, window and id."""

import numpy as np
import pytest

from gpuensembles.core import ffs
from gpuensembles.core.templates.rounds import CENSORED, REACHED, RETURNED, trial_runner
from gpuensembles.models.josephson import physics
from tests.round_case import weighted_successes

PARAMS = np.array([[1.0, 0.3, 0.5, 0.3, 0.01], [1.0, 1.0, 0.2, 0.5, 0.02]])


def _rounds():
    run = trial_runner(physics.trial_kernel("underdamped", "float64", "euler"), "cpu")
    return ffs.Rounds(run, PARAMS, np.array([3, 8], dtype=np.uint32), seed=11, width=3, max_steps=2000)


def test_a_segment_is_its_trials_one_by_one():
    # two segments whose trials take their pools' rows in turn (j mod rows) and ids first + j; the same
    # trials as one-trial segments each given its row and id, in any order, give the same results
    pools = [np.array([[1.2, 0.1], [np.nan, np.nan], [1.0, -0.2]]), np.array([[np.nan, np.nan], [1.1, 0.3]])]
    counts, lo, hi, first = [7, 4], [0.1, 0.05], [0.5, 0.6], [ffs.trial_id(ffs.STAGE, 2, 1, 40), 2**40 + 5]
    whole = _rounds()
    steps, status, ends = whole([0, 1], counts, pools, lo, hi, first)
    single = [(p, pools[p][j % len(pools[p])], lo[p], hi[p], first[p] + j) for p in (0, 1) for j in range(counts[p])]
    order = np.random.default_rng(0).permutation(len(single))
    alone = _rounds()
    parts = alone([single[k][0] for k in order], np.ones(len(order), np.int64), [single[k][1][None] for k in order],
                  [single[k][2] for k in order], [single[k][3] for k in order], [single[k][4] for k in order])
    back = np.argsort(order)
    np.testing.assert_array_equal(parts[0][back], steps)
    np.testing.assert_array_equal(parts[1][back], status)
    np.testing.assert_array_equal(parts[2][back], ends)
    assert {REACHED, RETURNED} <= set(status.tolist())  # both ends of the windows are met
    # the steps each point spent, summed per segment
    np.testing.assert_array_equal(whole.steps, [steps[:7].sum(), steps[7:].sum()])
    np.testing.assert_array_equal(alone.steps, whole.steps)


def test_a_kept_round_gives_each_segments_totals_and_its_reached_states_in_order():
    # the reduced round against its whole outputs, segment by segment; a segment of no trials has zero totals
    pools = [np.array([[1.2, 0.1], [np.nan, np.nan]]), np.array([[1.1, 0.3]]), np.array([[np.nan, np.nan]])]
    args = ([0, 1, 0], [9, 0, 12], pools, [0.1, 0.1, 0.05], [0.5, 0.5, 0.6], [2**40, 2**40 + 50, 2**41])
    whole, reduced = _rounds(), _rounds()
    steps, status, ends = whole(*args)
    totals, kept = reduced.kept(*args)
    bounds = np.cumsum([0, *args[1]])
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        won = status[a:b] == REACHED
        assert totals[k].tolist() == [won.sum(), steps[a:b][won].sum(), steps[a:b].sum(),
                                      (status[a:b] == CENSORED).sum()]
    assert 0 < totals[:, 0].sum() < len(steps)
    np.testing.assert_array_equal(kept, ends[status == REACHED, :2])
    np.testing.assert_array_equal(reduced.steps, whole.steps)


def test_empty_segments_run_nothing_and_an_empty_pool_is_refused():
    rounds = _rounds()
    steps, status, ends = rounds([0, 1, 0], [0, 3, 0], [np.zeros((0, 2)), np.array([[np.nan, np.nan]]),
                                                        np.zeros((0, 2))], [0.1] * 3, [0.5] * 3, [0, 10, 20])
    assert steps.shape == status.shape == (3,) and ends.shape == (3, 3)
    np.testing.assert_array_equal(rounds.steps, [0, steps.sum()])
    assert rounds([], [], [], [], [], [])[0].shape == (0,)
    with pytest.raises(ValueError, match="at least one start state"):
        rounds([0], [2], [np.zeros((0, 2))], [0.1], [0.5], [0])


def test_pruned_trials_keep_the_expected_successes_at_a_fraction_of_the_steps():
    # trials from 0.42 above the well bottom (row 1) to 0.8, falling back to 0.05; pruned at 0.35, 0.25
    # and 0.15 against not pruned, other ids: the weighted success counts have the same mean (to 4
    # standard errors of the two samples), and the failures' falls are cut. A survivor must go on with
    # fresh draws: going on with those of its block again (as a model's state would) biased the
    # successes up by 3-5 standard errors of rounds this size
    n = 100_000
    pruned, cut, levels = weighted_successes("cpu", [0.35, 0.25, 0.15], 2**40, n)
    plain, full, none = weighted_successes("cpu", [], 2**41, n)
    assert not none.any() and set(np.unique(plain)) == {0.0, 1.0}
    assert levels.max() == 3 and np.any((pruned > 1) & (levels > 0))  # survivors that still reached hi count more
    error = np.hypot(pruned.std(), plain.std()) / np.sqrt(n)
    assert abs(pruned.mean() - plain.mean()) <= 4 * error
    assert cut.sum() < 0.8 * full.sum()


def test_pruned_rounds_keep_each_success_as_often_as_it_counts():
    ladder, n = [0.35, 0.25, 0.15], 4000
    counts, _, _ = weighted_successes("cpu", ladder, 2**40, n)
    rounds = _rounds()
    totals, kept = rounds.kept([1], [n], [np.array([[1.2, 0.1]])], [0.05], [0.8], [2**40], [ladder])
    assert totals[0, 0] == counts.sum() and len(kept) == counts.sum()
    assert len(np.unique(kept, axis=0)) == np.count_nonzero(counts) < len(kept)  # copies, one after the other
    with pytest.raises(ValueError, match="needs a levels output"):
        _, _, (segments, windows, pool) = rounds._round([1], [4], [np.array([[1.2, 0.1]])], [0.05], [0.8], [0],
                                                        [ladder])
        rounds.run(PARAMS, segments, windows, pool, 11, 100, np.empty(4, np.int64), np.empty(4, np.int8),
                   np.empty((4, 3)))
    with pytest.raises(ValueError, match="6 pruning levels at most"):
        rounds.kept([1], [4], [np.array([[1.2, 0.1]])], [0.05], [0.8], [0], [np.linspace(0.4, 0.1, 7)])
