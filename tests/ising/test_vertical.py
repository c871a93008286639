"""Vertical counters: 32 lanes counted at once, checked lane by lane against integer sums."""

import numpy as np
import pytest

from gpuensembles.models.ising import vertical

LANES = np.arange(32)


def bits(word):
    """The 32 lanes of ``word`` as 0/1."""
    return (int(word) >> LANES) & 1


def counts(planes, at, width):
    """The 32 lanes' counts of the counter of ``width`` planes from ``planes[at]``."""
    return sum((bits(planes[at + i]) << i) for i in range(width))


def words(rng, n):
    return [np.uint32(w) for w in rng.integers(0, 1 << 32, n, dtype=np.uint64)]


def test_added_numbers_are_counted_in_every_lane_modulo_the_width():
    rng = np.random.default_rng(1)
    planes = np.zeros(vertical.PLANES, np.uint32)
    expected = np.zeros(32, np.int64)
    for _ in range(300):
        q = words(rng, 4)
        vertical.add_number(planes, 3, 9, *q)
        expected += sum(bits(w) << k for k, w in enumerate(q))
    np.testing.assert_array_equal(counts(planes, 3, 9), expected % 512)
    assert expected.max() > 512  # the sums wrapped: the modulus is the width's
    assert not planes[:3].any() and not planes[12:].any()  # nothing outside the counter


def test_anti_aligned_bonds_of_two_words_are_counted_per_lane():
    rng = np.random.default_rng(2)
    planes = np.zeros(vertical.PLANES, np.uint32)
    expected = np.zeros(32, np.int64)
    for _ in range(20):
        s0, s1, *neighbours = words(rng, 10)
        vertical.add_anti_aligned(planes, vertical.ANTI, vertical.ANTI_WIDTH, s0, *neighbours[:4], s1, *neighbours[4:])
        expected += sum(bits(s0 ^ n) for n in neighbours[:4]) + sum(bits(s1 ^ n) for n in neighbours[4:])
    np.testing.assert_array_equal(counts(planes, vertical.ANTI, vertical.ANTI_WIDTH), expected)


@pytest.mark.parametrize("colour", [0, 1])
def test_count_final_adds_flips_down_spins_and_the_bonds_of_late_flips(colour):
    rng = np.random.default_rng(3 + colour)
    planes = np.zeros(vertical.PLANES, np.uint32)
    flips, down, anti = (np.zeros(32, np.int64) for _ in range(3))
    for _ in range(12):
        f0, f1, d0, d1, late0, late1, dE4_0, dE4_1 = words(rng, 8)
        vertical.count_final(planes, colour, f0, f1, late0, late1, dE4_0, dE4_1, d0, d1)
        flips += bits(f0) + bits(f1)
        down += bits(d0) + bits(d1)
        for late, dE4 in ((late0, dE4_0), (late1, dE4_1)):  # one bond became three, or none four
            anti += colour * (2 * (bits(late) & bits(dE4)) + 4 * (bits(late) & (1 - bits(dE4))))
    np.testing.assert_array_equal(counts(planes, vertical.FLIPS, vertical.FLIPS_WIDTH), flips)
    np.testing.assert_array_equal(counts(planes, vertical.DOWN, vertical.DOWN_WIDTH), down)
    np.testing.assert_array_equal(counts(planes, vertical.ANTI, vertical.ANTI_WIDTH), anti)


def test_the_counters_hold_what_a_flush_allows():
    # between flushes a lane gains at most FLUSH_LIMIT flips and down spins, 4 times as many bonds
    assert (vertical.FLIPS + vertical.FLIPS_WIDTH <= vertical.DOWN and vertical.DOWN + vertical.DOWN_WIDTH
            <= vertical.ANTI and vertical.ANTI + vertical.ANTI_WIDTH == vertical.PLANES)
    assert vertical.FLUSH_LIMIT < 1 << vertical.DOWN_WIDTH
    assert 4 * vertical.FLUSH_LIMIT < 1 << vertical.ANTI_WIDTH


def byte_perm(x, y, selector):
    """PTX prmt.b32 (default mode): byte i of the result is byte ``selector >> 4 i & 7`` of ``y:x``."""
    both = (int(y) << 32) | int(x)
    return sum(((both >> 8 * ((selector >> 4 * i) & 7)) & 0xFF) << 8 * i for i in range(4))


def test_the_warp_transpose_steps_give_each_lane_its_column():
    # lane_count's exchanges on a GPU, emulated over 32 lanes: after them lane l holds bit l of
    # every lane's word, so its popc is the count of lattice l
    from gpuensembles.models.ising import kernels

    rng = np.random.default_rng(6)
    w = [int(x) for x in words(rng, 32)]
    for j, below, above in kernels._BYTE_EXCHANGES:
        w = [byte_perm(w[lane], w[lane ^ j], above if lane & j else below) for lane in range(32)]
    for j, mask in kernels._TRANSPOSE:
        w = [(w[lane] & ~mask & 0xFFFFFFFF) | ((w[lane ^ j] >> j) & mask) if lane & j else
             (w[lane] & mask) | ((w[lane ^ j] & mask) << j) for lane in range(32)]
    columns = [[(int(x) >> lane) & 1 for x in words(np.random.default_rng(6), 32)] for lane in range(32)]
    assert [bin(x).count("1") for x in w] == [sum(c) for c in columns]
    assert w == [sum(bit << k for k, bit in enumerate(c)) for c in columns]  # the transpose itself
