"""The multi-spin acceptance step against a lane-by-lane reference of the documented bit assignment."""

import numpy as np

from gpuensembles.core.rng import philox4x32
from gpuensembles.models.ising import physics


def _reference(dE4, dE8, p4, p8, seed, key, half_sweep, site, group):
    """Lane ``l`` accepts iff its own 32-bit ``U < P``, bit ``31 - (4 b + k)`` of ``U`` being bit
    ``l`` of word ``k`` of Philox block ``b`` (the whole ``U``: the kernel stops reading bits
    once every lane is decided, which cannot change a decision)."""
    words = [int(w) for b in range(8) for w in philox4x32(half_sweep, b, site, group, seed, key)]
    accepted = 0
    for lane in range(32):
        bit = 1 << lane
        if (dE4 | dE8) & bit:
            u = sum(((words[k] >> lane) & 1) << (31 - k) for k in range(32))
            accepted |= bit if u < int(p4[lane] if dE4 & bit else p8[lane]) else 0
    return accepted


def _accept(dE4, dE8, table, *args):
    return physics.accept_lanes(np.uint32(dE4 | dE8), np.uint32(dE4), np.uint32(0), table, 0, *args, 0,
                                physics.BLOCKS)


def test_accept_lanes_matches_the_lane_by_lane_reference():
    rng = np.random.default_rng(3)
    checked = deferred = 0
    for trial in range(400):
        beta = rng.uniform(0.0, 1.2, 32)
        p4, p8 = physics.thresholds(beta)
        table = np.concatenate([physics.bit_planes(p4), physics.bit_planes(p8)])
        # all 32 lanes in half the trials: words whose lanes need more than one Philox block
        candidates = np.uint32(2**32 - 1 if trial % 2 else rng.integers(0, 2**32))
        dE8 = np.uint32(candidates & np.uint32(rng.integers(0, 2**32)))
        dE4 = np.uint32(candidates & ~dE8)
        seed, key = np.uint32(rng.integers(0, 2**32)), np.uint32(rng.integers(0, 2**32))
        args = (seed, key, int(trial), int(rng.integers(0, 2**20)), int(rng.integers(0, 64)))
        got, left = _accept(dE4, dE8, table, *args)
        assert int(got) == _reference(int(dE4), int(dE8), p4, p8, *args)
        assert int(got) & ~int(dE4 | dE8) == 0 and left == 0
        # as the GPU kernels take it: the first blocks, then the lanes left from where they stopped
        for split in (1, physics.HEAD_BLOCKS):
            head, undecided = physics.accept_lanes(dE4 | dE8, dE4, np.uint32(0), table, 0, *args, 0, split)
            assert int(head) & int(undecided) == 0
            tail, left = physics.accept_lanes(undecided, undecided & dE4, head, table, 0, *args, split,
                                              physics.BLOCKS)
            assert tail == got and left == 0
            deferred += bin(int(undecided)).count("1")
        checked += bin(int(candidates)).count("1")
    assert checked > 5000 and deferred > 300


def test_accept_lanes_accepts_with_probability_p():
    # one lane at a time: the acceptance frequency is P / 2^32 within 4 standard errors
    for beta in (0.2, 0.4406868, 0.9):
        p4, p8 = physics.thresholds(np.full(32, beta))
        table = np.concatenate([physics.bit_planes(p4), physics.bit_planes(p8)])
        n = 20_000
        hits4 = sum(int(_accept(1 << 7, 0, table, 9, 5, t, 11, 0)[0]) >> 7
                    for t in range(n))
        hits8 = sum(int(_accept(0, 1 << 30, table, 9, 5, t, 11, 0)[0]) >> 30
                    for t in range(n))
        for hits, p in ((hits4, p4[0]), (hits8, p8[0])):
            q = float(p) / 2**32
            assert abs(hits / n - q) < 4 * np.sqrt(q * (1 - q) / n) + 1 / n
