"""The rate estimators of core.ffs on a process with a known answer (no model, no kernel)."""

import math

import numpy as np
import pytest

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


def _flux_half_by_half(rounds, todo, lam_a, lam_0, lam_b, dt, settings, batch):
    """The flux as rounds of one half-cycle each (what ``ffs._flux`` runs in one launch), for comparison."""
    R, W, C = settings.replicas, settings.walkers, settings.cycles
    walkers = np.repeat(todo, R * W)
    state, time, crossings = np.full((walkers.size, rounds.width - 1), np.nan), np.zeros(walkers.size), []
    for half in range(2 * (C + 1)):
        up = half % 2 == 0
        steps, status, ends = rounds(todo, np.full(len(todo), R * W), np.split(state, len(todo)),
                                     np.full(len(todo), -np.inf) if up else lam_a[todo],
                                     lam_0[todo] if up else lam_b[todo],
                                     np.full(len(todo), ffs.trial_id(ffs.FLUX, half, batch, 0)))
        state = ends[:, :-1].copy()
        if not up:
            state[status == REACHED] = np.nan
        if half >= 2:
            time += steps * dt[walkers]
            if up:
                crossings.append(state.copy())
    flux = (C * W) / time.reshape(len(todo), R, W).sum(axis=2)
    return flux, np.stack(crossings, axis=1).reshape(len(todo), R, W * C, rounds.width - 1)


def _underdamped_rounds():
    """Rounds of the underdamped BAOAB trials on the CPU at two points (streams 2 and 7, seed 5)."""
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "baoab"), "cpu")
    params = np.array([[1.0, 0.3, 0.5, 0.075, 0.05], [1.0, 0.3, 0.7, 0.09, 0.05]])
    return ffs.Rounds(run, params, np.array([2, 7], dtype=np.uint32), 5, 3, 10**6)


def test_the_flux_in_one_launch_is_the_flux_of_rounds_half_by_half():
    # walkers of two points (one hot enough that some escape on their way back and restart thermal)
    lam_a, lam_0, lam_b = np.array([0.2, 0.15]), np.array([0.5, 0.35]), np.array([0.8, 0.35])
    settings = ffs.FluxSettings(replicas=3, walkers=5, cycles=4)
    fused, halves = _underdamped_rounds(), _underdamped_rounds()
    todo, dt = np.array([1, 0]), fused.table[:, 4]
    flux, configs = ffs._flux(fused, todo, lam_a, lam_0, lam_b, dt, settings, 2, lambda: None)
    reference, crossings = _flux_half_by_half(halves, todo, lam_a, lam_0, lam_b, dt, settings, 2)
    np.testing.assert_array_equal(flux, reference)
    np.testing.assert_array_equal(np.array(configs), crossings)
    np.testing.assert_array_equal(fused.steps, halves.steps)
    assert np.all(np.isfinite(crossings)) and np.all(np.asarray(flux) > 0)
    # the second point's target is its first interface: every walker's way back ends there and it restarts
    _, status, _ = fused.cycles([1], [4], [np.full((1, 2), np.nan)], [[lam_a[1], lam_0[1], lam_b[1]]], [0], 4, 2**40)
    assert np.all(status[:, 1::2] == REACHED) and np.all(status[:, ::2] == REACHED)


def test_a_replica_is_the_same_in_a_batch_of_any_size():
    # further batches are sized per point: replica r's walkers and stages must not depend on that size
    lam_a, lam_0, lam_b, dt = np.array([0.2, 0.15]), np.array([0.5, 0.35]), np.array([0.8, 0.9]), np.full(2, 0.05)
    settings = ffs.FluxSettings(replicas=3, walkers=4, cycles=2, trials=np.array([40, 40]), pilots=32)
    todo = np.array([0, 1])
    runs = {}
    for sizes in ((3, 3), (1, 3), (3, 2)):
        rounds = _underdamped_rounds()
        flux, configs = ffs._flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, 1, lambda: None, np.array(sizes))
        assert [len(f) for f in flux] == [len(c) for c in configs] == list(sizes)
        chain = ffs._chain(rounds, todo, configs, lam_0.copy(), lam_a, lam_b, dt, settings, 1,
                           [[0.6, 0.8], [0.5, 0.7, 0.9]], lambda: None)
        runs[sizes] = [(f, chain.product[i, :n]) for i, (f, n) in enumerate(zip(flux, sizes))]
    full = runs[(3, 3)]
    assert all(np.all(f > 0) for f, _ in full) and np.any(full[0][1] > 0) and np.any(full[1][1] > 0)
    for sizes, found in runs.items():
        for (flux, product), (all_flux, all_product), n in zip(found, full, sizes):
            np.testing.assert_array_equal(flux, all_flux[:n])
            np.testing.assert_array_equal(product, all_product[:n])


def test_a_chain_that_drops_its_ends_finds_the_same_rates():
    # the first point ends a stage before the second, with more replicas: the second goes on alone
    lam_a, lam_0, lam_b, dt = np.array([0.2, 0.15]), np.array([0.5, 0.35]), np.array([0.8, 0.9]), np.full(2, 0.05)
    settings = ffs.FluxSettings(replicas=3, walkers=4, cycles=2, trials=np.array([40, 40]), pilots=32)
    todo, found = np.array([0, 1]), []
    for keep_ends in (True, False):
        rounds = _underdamped_rounds()
        _, configs = ffs._flux(rounds, todo, lam_a, lam_0, lam_b, dt, settings, 1, lambda: None, np.array([3, 2]))
        chain = ffs._chain(rounds, todo, configs, lam_0.copy(), lam_a, lam_b, dt, settings, 1,
                           [[0.6, 0.8], [0.5, 0.7, 0.9]], lambda: None, keep_ends=keep_ends)
        found.append((chain, configs, rounds.steps))
    (kept, kept_ends, kept_steps), (dropped, dropped_ends, dropped_steps) = found
    assert np.any(kept.product[0] > 0) and np.any(kept.product[1] > 0)
    for name in ("product", "failed"):
        np.testing.assert_array_equal(getattr(dropped, name), getattr(kept, name))
    np.testing.assert_array_equal(dropped_steps, kept_steps)
    assert [len(c) for c in kept_ends] == [3, 2] and sum(len(e) for e in kept_ends[0]) > 0
    assert dropped_ends == [[None] * 3, [None] * 2]


@pytest.mark.parametrize(("spread", "expected"), [
    (0.0, 0),  # the target is met: no further batch
    (0.045, 16),  # a little short: the fewest a batch holds
    (0.064, 52 - 16),  # short by (0.016 / 0.01)^2 = 2.56: 1.25 x 2.56 x 16 = 51.2 replicas wanted
    (0.5, 48),  # far short: what is left of 4 batches
])
def test_a_further_batch_is_sized_from_the_spread_so_far(spread, expected):
    settings = ffs.FluxSettings(replicas=16, rel_error=0.01, max_batches=4)
    # 16 rates of relative spread `spread` about 1 (sample standard deviation exactly `spread`)
    z = np.resize([1.0, -1.0], 16)
    rates = 1.0 + spread * z / np.std(z, ddof=1)
    assert ffs._relative_error(rates) == pytest.approx(spread / 4)
    assert ffs.next_batch(rates, settings) == expected
    assert ffs.next_batch(np.zeros(16), settings) == 48  # rates all zero: the most
    assert ffs.next_batch(np.ones(64) + np.resize([0.5, -0.5], 64), settings) == 0  # no room left


def test_a_flux_walker_out_of_steps_is_an_error():
    from gpuensembles.core.templates.rounds import trial_runner
    from gpuensembles.models.josephson import physics

    run = trial_runner(physics.trial_kernel("underdamped", "float64", "baoab"), "cpu")
    rounds = ffs.Rounds(run, np.array([[1.0, 0.3, 0.5, 0.01, 0.05]]), np.array([0], dtype=np.uint32), 5, 3, 50)
    settings = ffs.FluxSettings(replicas=2, walkers=2, cycles=1)
    with pytest.raises(RuntimeError, match="flux trial ran out of steps"):
        ffs._flux(rounds, np.array([0]), np.array([0.05]), np.array([0.4]), np.array([0.9]), np.array([0.05]),
                  settings, 0, lambda: None)
