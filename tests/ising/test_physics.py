"""The multi-spin acceptance step against a lane-by-lane reference of the documented bit assignment."""

import numpy as np

from gpuensembles.core.rng import philox4x32
from gpuensembles.models.ising import physics


def _reference(dE4, dE8, p4, p8, seed, key, half_sweep, site, group):
    """Lane ``l`` accepts iff its own 32-bit ``U < P``: bits 31..28 of ``U`` are bit ``l`` of the
    words of Philox block 0; the ``j``-th lane still undecided then takes bits 27..0 from word
    ``j % 4`` of block ``1 + j // 4`` (its top 28 bits)."""
    planes = philox4x32(half_sweep, 0, site, group, seed, key)
    accepted, j = 0, 0
    for lane in range(32):
        bit = 1 << lane
        if not (dE4 | dE8) & bit:
            continue
        p = int(p4[lane] if dE4 & bit else p8[lane])
        top = sum(((int(planes[k]) >> lane) & 1) << (3 - k) for k in range(4))
        if top != p >> 28:
            accepted |= bit if top < p >> 28 else 0
            continue
        w = int(philox4x32(half_sweep, 1 + j // 4, site, group, seed, key)[j % 4])
        j += 1
        if ((top << 28) | (w >> 4)) < p:
            accepted |= bit
    return accepted


def test_accept_lanes_matches_the_lane_by_lane_reference():
    rng = np.random.default_rng(3)
    checked, deep = 0, 0
    for trial in range(400):
        beta = rng.uniform(0.0, 1.2, 32)
        p4, p8 = physics.thresholds(beta)
        table = physics.threshold_table(p4, p8)
        # all 32 lanes in half the trials: five or more undecided lanes (Philox block 2) then occur
        candidates = np.uint32(2**32 - 1 if trial % 2 else rng.integers(0, 2**32))
        dE8 = np.uint32(candidates & np.uint32(rng.integers(0, 2**32)))
        dE4 = np.uint32(candidates & ~dE8)
        seed, key = np.uint32(rng.integers(0, 2**32)), np.uint32(rng.integers(0, 2**32))
        args = (seed, key, int(trial), int(rng.integers(0, 2**20)), int(rng.integers(0, 64)))
        got = physics.accept_lanes(dE4, dE8, table, 0, *args)
        assert int(got) == _reference(int(dE4), int(dE8), p4, p8, *args)
        assert int(got) & ~int(dE4 | dE8) == 0
        checked += bin(int(candidates)).count("1")
        planes = philox4x32(args[2], 0, args[3], args[4], seed, key)
        top = [sum(((int(planes[k]) >> lane) & 1) << (3 - k) for k in range(4)) for lane in range(32)]
        p = [int(p4[lane] if int(dE4) >> lane & 1 else p8[lane]) >> 28 for lane in range(32)]
        deep += sum(int(candidates) >> lane & 1 and top[lane] == p[lane] for lane in range(32)) >= 5
    assert checked > 5000 and deep >= 3  # lanes settled from blocks 1 and 2 are both covered


def test_accept_lanes_accepts_with_probability_p():
    # one lane at a time: the acceptance frequency is P / 2^32 within 4 standard errors
    for beta in (0.2, 0.4406868, 0.9):
        p4, p8 = physics.thresholds(np.full(32, beta))
        table = physics.threshold_table(p4, p8)
        n = 20_000
        hits4 = sum(int(physics.accept_lanes(np.uint32(1 << 7), np.uint32(0), table, 0, 9, 5, t, 11, 0)) >> 7
                    for t in range(n))
        hits8 = sum(int(physics.accept_lanes(np.uint32(0), np.uint32(1 << 30), table, 0, 9, 5, t, 11, 0)) >> 30
                    for t in range(n))
        for hits, p in ((hits4, p4[0]), (hits8, p8[0])):
            q = float(p) / 2**32
            assert abs(hits / n - q) < 4 * np.sqrt(q * (1 - q) / n) + 1 / n
