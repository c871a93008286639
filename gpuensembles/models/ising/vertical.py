"""Vertical (bit-sliced) counters: 32 small integers, one per bit lane, kept as bit planes.

A multi-spin word holds one site of 32 lattices (bit ``l`` is lattice ``l``). A counter of
``width`` planes ``planes[at .. at + width - 1]`` holds, in bit ``l`` of plane ``i``, bit ``i``
of lattice ``l``'s count, so one word operation adds to all 32 counts at once: adding a word
of 0/1 per lane costs two operations a plane, where counting its lanes across a warp (a
32 x 32 bit transpose) costs about sixty. The resident Ising kernel counts down spins,
anti-aligned bonds and flips of a measured sweep this way and transposes only the counters,
once a sweep. Counts are modulo ``2**width``: the caller keeps them below that.

The functions are shared by the CPU and CUDA targets (``numba.jit``, called from kernels).
"""

import numpy as np

from ...core.rng import jit


@jit
def sum_of_four(x0, x1, x2, x3):
    """Bit planes ``(ones, twos, fours)`` of ``x0 + x1 + x2 + x3`` in every lane (uint32 words of 0/1 per lane)."""
    a = np.uint32(x0 ^ x1)
    c = np.uint32(x2 ^ x3)
    carry_a = np.uint32(x0 & x1)
    carry_c = np.uint32(x2 & x3)
    ones = np.uint32(a ^ c)
    carry = np.uint32(a & c)
    twos = np.uint32(carry_a ^ carry_c ^ carry)  # at most two of the three carries are set
    fours = np.uint32(carry_a & carry_c)
    return ones, twos, fours


@jit
def add_number(planes, at, width, q0, q1, q2, q3):
    """Add the number with bit planes ``q0 .. q3`` to a counter, in every lane.

    The counter is the ``width`` planes from ``planes[at]`` (modulo ``2**width``; ripple carry,
    two to five operations a plane).
    """
    carry = np.uint32(0)
    for i in range(width):
        if i == 0:
            q = np.uint32(q0)
        elif i == 1:
            q = np.uint32(q1)
        elif i == 2:
            q = np.uint32(q2)
        elif i == 3:
            q = np.uint32(q3)
        else:
            q = np.uint32(0)
        p = planes[at + i]
        s = np.uint32(p ^ q)
        planes[at + i] = np.uint32(s ^ carry)
        carry = np.uint32((p & q) | (s & carry))


@jit
def add_anti_aligned(planes, at, width, s0, n00, n01, n02, n03, s1, n10, n11, n12, n13):
    """Add the anti-aligned bonds of two words to a counter, in every lane.

    The bonds of words ``s0`` and ``s1`` to their four neighbour words each (0 to 8 a lane)
    go to the counter of ``width`` planes from ``planes[at]``.
    """
    a0, a1, a2 = sum_of_four(np.uint32(s0 ^ n00), np.uint32(s0 ^ n01), np.uint32(s0 ^ n02), np.uint32(s0 ^ n03))
    b0, b1, b2 = sum_of_four(np.uint32(s1 ^ n10), np.uint32(s1 ^ n11), np.uint32(s1 ^ n12), np.uint32(s1 ^ n13))
    q0 = np.uint32(a0 ^ b0)
    c0 = np.uint32(a0 & b0)
    t1 = np.uint32(a1 ^ b1)
    q1 = np.uint32(t1 ^ c0)
    c1 = np.uint32((a1 & b1) | (t1 & c0))
    t2 = np.uint32(a2 ^ b2)
    q2 = np.uint32(t2 ^ c1)
    q3 = np.uint32((a2 & b2) | (t2 & c1))
    add_number(planes, at, width, q0, q1, q2, q3)


# The resident Ising kernel's counters of a measured sweep (per thread, per lane = lattice):
# where they start in ``planes`` and their widths. A thread flushes them (transposes them
# across its warp) before a lane can pass ``2**width - 1``: see ``FLUSH_LIMIT``.
FLIPS, FLIPS_WIDTH = 0, 5
DOWN, DOWN_WIDTH = 5, 5
ANTI, ANTI_WIDTH = 10, 7
PLANES = 17
#: Most a lane of ``FLIPS`` or ``DOWN`` may hold between flushes (``ANTI`` holds 4 times as much).
FLUSH_LIMIT = (1 << FLIPS_WIDTH) - 1


@jit
def count_final(planes, c, f0, f1, late0, late1, dE4_0, dE4_1, d0, d1):
    """Add two words' flips, down spins and late bonds to the resident kernel's counters.

    The flips ``f0``, ``f1`` and final down spins ``d0``, ``d1`` of two words of colour ``c``
    go to ``FLIPS`` and ``DOWN``; in colour 1, also the anti-aligned bonds its lanes ``late0``,
    ``late1`` gained by flipping after the bonds of their words were counted (lanes left
    undecided at the head: at dE = 4 (lanes of ``dE4_0``, ``dE4_1``) one bond became three, at
    dE = 8 none became four) go to ``ANTI``.
    """
    add_number(planes, FLIPS, FLIPS_WIDTH, np.uint32(f0 ^ f1), np.uint32(f0 & f1), 0, 0)
    add_number(planes, DOWN, DOWN_WIDTH, np.uint32(d0 ^ d1), np.uint32(d0 & d1), 0, 0)
    if c == 1 and (late0 | late1) != 0:
        add_number(planes, ANTI, ANTI_WIDTH, 0, np.uint32(late0 & dE4_0), np.uint32(late0 & ~dE4_0), 0)
        add_number(planes, ANTI, ANTI_WIDTH, 0, np.uint32(late1 & dE4_1), np.uint32(late1 & ~dE4_1), 0)
