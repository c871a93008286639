"""Quasi-greedy updates of the 3-spin model, 32 clones per word: the pieces every target shares.

Model (Bernaschi et al. 2021): ``N`` bits ``x_v`` (spin ``1 - 2 x_v``), ``N`` triplets; triplet ``a``
is *unsatisfied* when ``x_i ^ x_j ^ x_k != b_a``. A variable with ``u`` of its three
triplets unsatisfied flips with probability 0 (``u = 0``), ``p`` (``u = 1``) or 1
(``u >= 2``). Variables sharing no triplet are independent, so the solver colours the
variable graph into sets of at most 32 and relabels the variables so that set ``s`` is
the labels ``[bounds[s], bounds[s + 1])``. A sweep updates the sets in order; on a GPU
the 32 threads of a warp update one set at once, on the CPU a thread goes through it in
order, with identical results.

Multi-spin coding: bit ``l`` of word ``w`` of variable ``v`` is ``x_v`` of clone
``32 w + l``. One update classifies the 32 clones of a word with bitwise logic:
``t_a = x_v ^ x_o1 ^ x_o2 ^ b_a`` marks the unsatisfied triplets, ``u >= 2`` is their
majority and ``u = 1`` their parity without the majority.

Graph storage: three uint32 per variable, one per triplet, ``o1 | o2 << 12 | b << 24``
(``o1, o2`` the other two variables' labels): ``N <= 4095``.

Random bits. A clone with ``u = 1`` flips when a fresh uniform 32-bit integer
``U < P = floor(p 2^32)`` (``p = 1``: always): exact to ``2^-32``. The comparison is
bit-serial over the word's undecided clones, from the most significant bit; random word
``k`` supplies bit ``31 - k`` of every clone's own ``U`` and the loop stops once every
clone is decided (a clone is decided after two words on average; the word's loop runs
until its last clone is, at most 32 words) or ``P``'s remaining bits are all zero (then
``U >= P`` for every undecided clone), so no random bit feeds two decisions and each
clone's decision is independent of the others. Random words come
from Philox4x32-10 with key ``(seed, instance | p_index << 16)`` and counter ``(sweep,
v | block << 12 | N << 16, word, run)``; a clone's trajectory therefore depends only on
the seed, the instance, ``p``'s position, the run and the clone, never on chunking,
launch geometry or backend (all arithmetic is integer).

Detecting solutions costs two bitwise ORs per update: a clone that saw no unsatisfied
triplet in a whole sweep flipped nothing in it, so every triplet was satisfied when the
sweep began. Since ``u = 0`` never flips, a solution is a fixed point.
"""

import numpy as np

from ...core.rng import jit, philox4x32

ALL_ONES = np.uint32(0xFFFFFFFF)
#: Largest ``N`` the 12-bit labels of the graph words hold.
MAX_N = 4095
#: Sweep counter value reserved for the random initial configuration.
START_COUNTER = 0xFFFFFFFF
_U = np.uint64  # unsigned indices: numba then emits no negative-index wraparound code
_LABEL = np.uint32(0xFFF)
_TWELVE = np.uint32(12)
_PARITY_SHIFT = np.uint32(24)


def threshold(p: float) -> tuple:
    """``(P, always)``: the uint32 threshold ``floor(p 2^32)`` and whether ``p == 1``."""
    if p >= 1.0:
        return np.uint32(0), True
    return np.uint32(np.floor(p * 2.0**32)), False


def key(instance: int, p_index: int) -> np.uint32:
    """Second Philox key word (``instance, p_index < 2**16``)."""
    return np.uint32(instance | (p_index << 16))


def pack_graph(triplets: np.ndarray, parity: np.ndarray, N: int) -> np.ndarray:
    """Graph words ``(3 N,)``: for variable ``v``, one word per triplet it is in (see module docstring)."""
    graph = np.zeros((N, 3), dtype=np.uint32)
    filled = np.zeros(N, dtype=np.int64)
    for (i, j, k), b in zip(triplets.tolist(), parity.tolist()):
        for v, o1, o2 in ((i, j, k), (j, i, k), (k, i, j)):
            graph[v, filled[v]] = o1 | (o2 << 12) | (int(b) << 24)
            filled[v] += 1
    return graph.reshape(-1)


@jit
def initial_word(seed, key1, N, v, word, run):
    """Random start: bits of word ``word`` of variable ``v`` in run ``run``."""
    return philox4x32(START_COUNTER, np.uint32(v | (N << 16)), word, run, seed, key1)[0]


@jit
def _flips_u1(undecided, P, always, seed, key1, t, node, word, run):
    """Which of the ``undecided`` clones (``u = 1``) flip: ``U < P`` bit-serially (see module docstring)."""
    if always:
        return undecided
    accept = np.uint32(0)
    k = 0
    r0 = r1 = r2 = r3 = np.uint32(0)
    while undecided != 0 and np.uint32(P << np.uint32(k)) != 0:  # once P's remaining bits are 0, U >= P
        q = k & 3
        if q == 0:
            r0, r1, r2, r3 = philox4x32(t, np.uint32(node | ((k >> 2) << 12)), word, run, seed, key1)
        r = r0 if q == 0 else (r1 if q == 1 else (r2 if q == 2 else r3))
        if (P >> np.uint32(31 - k)) & np.uint32(1):
            accept |= undecided & ~r
            undecided &= r
        else:
            undecided &= ~r
        k += 1
    return np.uint32(accept)


@jit
def _unsatisfied(spins, base, s, g):
    """Clones of word ``s`` whose triplet (graph word ``g``) is unsatisfied."""
    x = np.uint32(s ^ spins[_U(base + (g & _LABEL))] ^ spins[_U(base + ((g >> _TWELVE) & _LABEL))])
    return np.uint32(~x) if (g >> _PARITY_SHIFT) & np.uint32(1) else x


@jit
def update(spins, base, graph, gbase, v, N, P, always, frozen, seed, key1, t, word, run):
    """Quasi-greedy update of variable ``v`` in the 32 clones of one word; returns the
    clones that saw an unsatisfied triplet (``spins[base + v]`` is the word of ``v``,
    ``graph[gbase + 3 v + a]`` its triplets).

    ``frozen``: only look (the detection pass after the last sweep).
    """
    s = spins[_U(base + v)]
    g = _U(gbase + 3 * v)
    t0 = _unsatisfied(spins, base, s, graph[g])
    t1 = _unsatisfied(spins, base, s, graph[g + _U(1)])
    t2 = _unsatisfied(spins, base, s, graph[g + _U(2)])
    seen = np.uint32(t0 | t1 | t2)
    if frozen or seen == 0:
        return seen
    two = np.uint32((t0 & t1) | (t0 & t2) | (t1 & t2))
    one = np.uint32((t0 ^ t1 ^ t2) & ~two)
    flip = two
    if one != 0:
        flip |= _flips_u1(one, P, always, seed, key1, np.uint32(t), np.uint32(v | (N << 16)), word, run)
    spins[_U(base + v)] = np.uint32(s ^ flip)
    return seen
