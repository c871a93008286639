"""The multi-spin acceptance step against a lane-by-lane reference of the documented bit assignment."""

import numpy as np

from gpuensembles.core.rng import philox4x32
from gpuensembles.models.ising import physics


def _reference(dE4, dE8, p4, p8, seed, key, half_sweep, site, group):
    """Lane ``l`` at dE > 0 accepts iff its own 32-bit ``U < P`` (the others always): bit
    ``31 - (4 b + k)`` of ``U`` is bit ``l`` of word ``k`` of Philox block ``b`` (b = 0, 1);
    where those 8 bits equal ``P``'s, the low 24 bits are the top 24 of word ``m % 4`` of block
    ``2 + m // 4``, ``m`` the lane's rank among such lanes of the word (from the least
    significant)."""
    def block(b):
        return [int(w) for w in philox4x32(half_sweep, site, group, b, seed, key)]

    planes = block(0) + block(1)
    accepted, m = 0, 0
    for lane in range(32):
        bit = 1 << lane
        if not (dE4 | dE8) & bit:
            accepted |= bit  # dE < 0
        else:
            p = int(p4[lane] if dE4 & bit else p8[lane])
            top = sum(((planes[k] >> lane) & 1) << (7 - k) for k in range(8))
            if top == p >> 24:
                top = (top << 24) | (block(2 + m // 4)[m % 4] >> 8)
                m += 1
            else:
                top <<= 24
            accepted |= bit if top < p else 0
    return accepted


def _accept(dE4, dE8, table, *args):
    """The package's decisions: :func:`physics.decide_head` (from neighbour words giving these
    classes) then :func:`physics.finish_lanes`; ``(accepted, lanes finished)``."""
    # a word of zeros: its neighbours are all 0 at dE8 lanes, all but one 0 at dE4 lanes and
    # two 1 at the other lanes (dE < 0: always flipped)
    up, down, zero = ~np.uint32(dE8), ~np.uint32(dE4 | dE8), np.uint32(0)
    flip, undecided, d4 = physics.decide_head(zero, up, down, zero, zero, table, 0, *args)
    assert int(d4) == int(undecided) & int(dE4)
    return np.uint32(flip | physics.finish_lanes(undecided, d4, table, 0, *args)), undecided


def test_accept_lanes_matches_the_lane_by_lane_reference():
    rng = np.random.default_rng(3)
    checked = finished = 0
    for trial in range(400):
        beta = rng.uniform(0.0, 1.2, 32)
        p4, p8 = physics.thresholds(beta)
        table = physics.threshold_table(p4, p8)
        # all 32 lanes in half the trials: words with several lanes left after the head
        candidates = np.uint32(2**32 - 1 if trial % 2 else rng.integers(0, 2**32))
        dE8 = np.uint32(candidates & np.uint32(rng.integers(0, 2**32)))
        dE4 = np.uint32(candidates & ~dE8)
        seed, key = np.uint32(rng.integers(0, 2**32)), np.uint32(rng.integers(0, 2**32))
        args = (seed, key, int(trial), int(rng.integers(0, 2**20)), int(rng.integers(0, 64)))
        got, undecided = _accept(dE4, dE8, table, *args)
        assert int(got) == _reference(int(dE4), int(dE8), p4, p8, *args)
        assert int(got) | int(dE4 | dE8) == 2**32 - 1  # every dE < 0 lane flips
        checked += bin(int(candidates)).count("1")
        finished += bin(int(undecided)).count("1")
    assert checked > 5000 and finished > 20


def test_threshold_table_keeps_each_lane_at_its_own_slot():
    # the lanes' thresholds are stored by de Bruijn slot: a permutation, and the slot of the
    # lowest set bit of any word is (low * constant mod 2^32) >> 27
    slots = physics.lane_slots()
    assert sorted(slots) == list(range(32))
    p4, p8 = np.arange(1, 33, dtype=np.uint32), np.arange(101, 133, dtype=np.uint32)
    table = physics.threshold_table(p4, p8)
    for lane in range(32):
        assert table[64 + slots[lane]] == p4[lane] and table[96 + slots[lane]] == p8[lane]
        assert ((1 << lane) * 0x077CB531) % 2**32 >> 27 == slots[lane]
    short = physics.threshold_table(p4[:3], p8[:3])  # missing lanes count as 0
    assert np.count_nonzero(short[64:]) == 6


def test_threshold_tables_of_many_groups_are_those_of_each_group():
    rng = np.random.default_rng(5)
    p4, p8 = physics.thresholds(rng.uniform(0.0, 1.0, (7, 32)).ravel())
    p4, p8 = p4.reshape(7, 32), p8.reshape(7, 32)
    tables = physics.threshold_table(p4, p8)
    assert tables.shape == (7, physics.THRESHOLD_STRIDE["multispin"])
    for g in range(7):
        np.testing.assert_array_equal(tables[g], physics.threshold_table(p4[g], p8[g]))
    planes = physics.bit_planes(p4[2])
    for k in range(32):
        for lane in range(32):
            assert (int(planes[k]) >> lane) & 1 == (int(p4[2, lane]) >> (31 - k)) & 1


def test_finish_lanes_reads_a_second_block_past_four_lanes():
    # six lanes left: lanes 4 and 5 of the rank order take words 0 and 1 of block 3
    p4, p8 = physics.thresholds(np.full(32, 0.3))
    table = physics.threshold_table(p4, p8)
    lanes = [1, 3, 8, 20, 21, 30]
    undecided = np.uint32(sum(1 << lane for lane in lanes))
    args = (np.uint32(7), np.uint32(9), 4, 77, 2)
    got = physics.finish_lanes(undecided, np.uint32(1 << 21), table, 0, *args)
    words = [int(w) for b in (2, 3) for w in philox4x32(4, 77, 2, b, 7, 9)]
    expected = 0
    for m, lane in enumerate(lanes):
        p = int(p4[lane] if lane == 21 else p8[lane])
        expected |= (1 << lane) if (words[m] >> 8) < (p & 0xFFFFFF) else 0
    assert int(got) == expected


def test_accept_lanes_accepts_with_probability_p():
    # one lane at a time: the acceptance frequency is P / 2^32 within 4 standard errors
    for beta in (0.2, 0.4406868, 0.9):
        p4, p8 = physics.thresholds(np.full(32, beta))
        table = physics.threshold_table(p4, p8)
        n = 20_000
        hits4 = sum((int(_accept(1 << 7, 0, table, 9, 5, t, 11, 0)[0]) >> 7) & 1
                    for t in range(n))
        hits8 = sum((int(_accept(0, 1 << 30, table, 9, 5, t, 11, 0)[0]) >> 30) & 1
                    for t in range(n))
        for hits, p in ((hits4, p4[0]), (hits8, p8[0])):
            q = float(p) / 2**32
            assert abs(hits / n - q) < 4 * np.sqrt(q * (1 - q) / n) + 1 / n
