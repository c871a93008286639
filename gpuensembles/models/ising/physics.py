"""Checkerboard Metropolis for the 2D Ising model: the pieces every kernel and target shares.

Model: periodic ``L x L`` lattice, ``E = -J sum_<ij> s_i s_j`` with ``J = 1``, no field. A
sweep updates the black sites (``x + y`` even), then the white ones; a site's four
neighbours all have the other colour, so each half-sweep is a set of independent
Metropolis updates (updating all sites at once would not be).

Storage (both kernels). Each colour is kept apart as ``L`` rows of ``L/2`` sites; site
``h`` of row ``y`` of colour ``c`` is the lattice site ``x = 2h + (y + c) % 2``. Its
neighbours are sites ``h`` of rows ``y +- 1`` and sites ``h`` and ``h + 1`` (when
``y + c`` is odd) or ``h - 1`` (even) of row ``y``, all in the other colour. Colour
``c``, row ``y``, column ``j`` of a group is element ``(c L + y) S + j`` of its block of
``2 L S`` items.

* **int8 kernel** (the reference): one byte per spin (+1 / -1), ``S = L/2``, a group is
  one lattice. One Philox block gives the four 32-bit uniforms of four sites (a *quad*).
  When ``S % 4 == 0`` a quad is one aligned uint32 and its four sites are updated together
  with byte-wise bit operations (:func:`update_quad_words`), with the same result.
* **multi-spin kernel**: one bit per spin (1 = spin down), 32 spins per uint32 word.
  The 32 *lanes* of a word are either 32 independent lattices (``replicas`` layout,
  ``S = L/2``: a group is 32 systems) or 32 strips of one lattice (``strips`` layout,
  ``S = L/64``: lane ``k`` holds columns ``h = k S + j``; a neighbour across a strip
  edge is the next lane, one bit rotation away). Neighbour counts are bit-sliced: a few
  bitwise operations classify all 32 spins at once.

Acceptance is exact Metropolis to 2^-32: a move that raises the energy by ``dE`` (4 or 8)
is accepted when a fresh uniform 32-bit integer ``U < P = floor(2^32 exp(-beta dE))``.
The multi-spin kernel makes that comparison for its 32 lanes at once. The top 8 bits of
every lane's ``U`` come bit-serially, from the most significant: word ``k`` of the word's
first two Philox blocks supplies bit ``31 - k`` of every lane's ``U`` (:func:`decide_head`).
A lane whose 8 bits differ from ``P``'s is decided by them; a lane whose 8 bits equal
``P``'s (probability 2^-8 per lane) takes the 24 low bits of ``U`` from a 32-bit word of
its own: the ``m``-th such lane of the word (from the least significant) the top 24 bits of
word ``m % 4`` of block ``2 + m // 4`` (:func:`finish_lanes`). Every lane thus compares its
own independent 32-bit uniform with ``P``, exactly as the int8 kernel does: no random bit
ever feeds two decisions. The column kernels set the ~10 % of words with a lane left after
the first two blocks aside, to finish them all together: the 32 threads of a warp then do not
wait for the slowest word of each row. The band sweeps, with a word or two a thread, draw that
block for every word ahead of its update (:func:`decide_drawn`, :func:`finish_drawn`). Same
numbers, same decisions.

Randomness: Philox4x32-10 with key ``(seed, L | tag << 28)`` and counter ``(half-sweep,
site, group, block)`` (multi-spin: :func:`draw_block`) or ``(half-sweep, 0, quad, group)``
(int8); a lattice's numbers depend only on the seed, ``L``, its group and its lane, never on
chunking, launch geometry or backend (all arithmetic is integer, so the CPU and any GPU
give identical configurations).
"""

import numpy as np

from ...core.rng import jit, philox4x32
from .vertical import sum_of_four

ALL_ONES = np.uint32(0xFFFFFFFF)
# Array indices are cast to uint64: numba then skips its negative-index wraparound code,
# which was a third of the instructions of the CUDA update loop. Offsets within a group
# (``< 2 L S <= 2^32``) are computed in 32 bits (``_at``, ``_row``, ``_rows_around``): numba
# computes integers in 64 bits, which a GPU emulates with two or three instructions each.
_U = np.uint64
_I = np.uint32
_ONE = np.uint32(1)
_LAST = np.uint32(31)

#: Tags in the high bits of the second Philox key word (the low bits hold ``L``).
TAG_MULTISPIN, TAG_MULTISPIN_START, TAG_INT8, TAG_INT8_START = 0, 1, 2, 3
#: Half-sweep counter value reserved for the random initial configuration.
START_COUNTER = 0xFFFFFFFF
#: Values per group of the threshold table: 32 bit planes for dE = 4, 32 for dE = 8, then the
#: 32 lanes' thresholds for dE = 4 and for dE = 8, by slot (multi-spin, :func:`threshold_table`), or
#: the two thresholds themselves (int8).
THRESHOLD_STRIDE = {"multispin": 128, "int8": 2}
#: Offset of the lanes' own thresholds in a multi-spin group's table (dE = 4; dE = 8 at + 32).
_LANE_THRESHOLDS = np.uint32(64)
#: The lanes' own thresholds are stored by slot, not by lane: lane ``l`` at slot
#: ``(2^l * _DE_BRUIJN mod 2^32) >> 27`` (a de Bruijn sequence: a permutation of 0..31), so
#: :func:`finish_lanes` finds the slot of a word's lowest lane with one multiply and one shift
#: (the lane's index by a bit count took 12 instructions: 3032-3038 against 2997-3004
#: flips/ns, H200, 16384^2).
_DE_BRUIJN = np.uint32(0x077CB531)
_SLOT_SHIFT = np.uint32(27)


def lane_slots() -> np.ndarray:
    """Slot of each of the 32 lanes in a group's table of lane thresholds (a permutation of 0..31)."""
    lanes = np.uint64(1) << np.arange(32, dtype=np.uint64)
    return (((lanes * np.uint64(_DE_BRUIJN)) & np.uint64(0xFFFFFFFF)) >> np.uint64(_SLOT_SHIFT)).astype(np.intp)


def philox_key(L: int, tag: int) -> np.uint32:
    """Second Philox key word for lattices of size ``L`` (``L < 2**28``)."""
    return np.uint32(L | (tag << 28))


def thresholds(beta) -> tuple:
    """``(P4, P8)``: uint32 ``floor(2^32 exp(-beta dE))`` for dE = 4, 8, capped at ``2^32 - 1``.

    The acceptance probability ``P / 2^32`` is within ``2^-32`` of ``exp(-beta dE)``.
    """
    beta = np.asarray(beta, dtype=np.float64)
    out = []
    for dE in (4.0, 8.0):
        with np.errstate(over="ignore"):  # beta dE beyond float64: exp(-inf) = 0, never accepted
            p = np.floor(np.exp(-beta * dE) * 2.0**32)
        out.append(np.minimum(p, 2.0**32 - 1).astype(np.uint32))
    return tuple(out)


def bit_planes(p: np.ndarray) -> np.ndarray:
    """uint32 words ``(..., 32)``: word ``k`` has bit ``l`` set when bit ``31 - k`` of ``p[..., l]`` is set.

    ``p`` holds the thresholds of up to 32 lanes along its last axis (missing lanes count as 0).
    """
    p = np.asarray(p, dtype=np.uint64)
    bits = (p[..., None, :] >> (31 - np.arange(32, dtype=np.uint64))[:, None]) & np.uint64(1)
    return (bits << np.arange(p.shape[-1], dtype=np.uint64)).sum(axis=-1, dtype=np.uint64).astype(np.uint32)


_SLOTS = lane_slots()  # taken once: a run builds one table per group of 32 lanes


def threshold_table(p4, p8) -> np.ndarray:
    """A multi-spin group's thresholds (uint32, ``THRESHOLD_STRIDE["multispin"]``) from the
    ``(32,)`` thresholds of its lanes for dE = 4 and dE = 8: their bit planes, then themselves,
    lane ``l`` at slot ``lane_slots()[l]`` (missing lanes count as 0). Given ``(groups, 32)``
    thresholds, the tables of all the groups, ``(groups, THRESHOLD_STRIDE["multispin"])``."""
    p4, p8 = np.asarray(p4, np.uint32), np.asarray(p8, np.uint32)
    own4, own8 = np.zeros(p4.shape[:-1] + (32,), np.uint32), np.zeros(p8.shape[:-1] + (32,), np.uint32)
    own4[..., _SLOTS[:p4.shape[-1]]], own8[..., _SLOTS[:p8.shape[-1]]] = p4, p8
    return np.concatenate([bit_planes(p4), bit_planes(p8), own4, own8], axis=-1).astype(np.uint32)


@jit
def _at(base, k):
    """Array index of item ``k`` (a 32-bit offset) of the group stored from ``lat[base]``."""
    return _U(base) + _U(_I(k))


@jit
def _row(c, y, L, S):
    return _I((_I(c) * _I(L) + _I(y)) * _I(S))


@jit
def _rows_around(y, L):
    """Rows ``y - 1`` and ``y + 1`` of a torus of ``L`` rows (32-bit)."""
    y = _I(y)
    up = _I(y - _ONE) if y != 0 else _I(_I(L) - _ONE)
    down = _I(y + _ONE)
    return up, down if down != _I(L) else _I(0)


@jit
def _odd(y, c):
    """Whether row ``y`` of colour ``c`` holds the odd columns (its side neighbour is item ``j + 1``)."""
    return (_I(y) ^ _I(c)) & _ONE


@jit
def neighbours(lat, base, c, y, j, L, S):
    """The four neighbours of item ``(c, y, j)``, and ``+1`` / ``-1`` if the side one wrapped
    past the end / start of its row (0 otherwise)."""
    o = 1 - c
    j = _I(j)
    y_up, y_down = _rows_around(y, L)
    up = lat[_at(base, _row(o, y_up, L, S) + j)]
    down = lat[_at(base, _row(o, y_down, L, S) + j)]
    row = _row(o, _I(y), L, S)
    same = lat[_at(base, row + j)]
    wrapped = 0
    if _odd(y, c):
        if _I(j + _ONE) != _I(S):
            side = lat[_at(base, row + j + _ONE)]
        else:
            side = lat[_at(base, row)]
            wrapped = 1
    else:
        if j != 0:
            side = lat[_at(base, row + j - _ONE)]
        else:
            side = lat[_at(base, row + _I(S) - _ONE)]
            wrapped = -1
    return up, down, same, side, wrapped


@jit
def _across_strips(w, wrapped):
    """Neighbour word across a strip edge: lane ``k + 1`` (``wrapped = 1``) or ``k - 1`` moved to lane ``k``."""
    if wrapped > 0:
        return np.uint32((w >> _ONE) | (w << _LAST))
    return np.uint32((w << _ONE) | (w >> _LAST))


@jit
def _word_with_neighbours(lat, base, c, y, j, L, S, strips):
    """Index and value of word ``(y, j)`` of colour ``c``, and its four neighbour words
    (the side one moved across a strip edge)."""
    up, down, same, side, wrapped = neighbours(lat, base, c, y, j, L, S)
    if strips and wrapped != 0:
        side = _across_strips(side, wrapped)
    w = _at(base, _row(c, _I(y), L, S) + _I(j))
    return w, lat[w], up, down, same, side


@jit
def _word_and_neighbours(lat, base, c, y, j, L, S, strips):
    """:func:`_word_with_neighbours`, each neighbour XORed with the word (bit set = anti-aligned pair)."""
    w, s, up, down, same, side = _word_with_neighbours(lat, base, c, y, j, L, S, strips)
    return w, s, np.uint32(s ^ up), np.uint32(s ^ down), np.uint32(s ^ same), np.uint32(s ^ side)


@jit
def classify(x0, x1, x2, x3):
    """Bit-sliced count of anti-aligned neighbours (``x_i`` = word XOR neighbour ``i``): lanes
    with >= 2 (``dE <= 0``), exactly 1 (``dE = 4``) and none (``dE = 8``)."""
    a = np.uint32(x0 ^ x1)
    b = np.uint32(x0 & x1)
    c = np.uint32(x2 ^ x3)
    d = np.uint32(x2 & x3)
    two_or_more = np.uint32(b | d | (a & c))
    exactly_one = np.uint32((a ^ c) & (two_or_more ^ ALL_ONES))
    none = np.uint32((x0 | x1 | x2 | x3) ^ ALL_ONES)
    return two_or_more, exactly_one, none


#: Philox blocks of bit planes every word reads (:func:`decide_head`): the top 8 bits of ``U``.
HEAD_BLOCKS = 2
#: Bits of ``U`` that come from a lane's own word when the head leaves it undecided.
_LOW_BITS = np.uint32(24)
_LOW_MASK = np.uint32((1 << 24) - 1)
# Arguments the kernels pass as constants, typed (np.int64, not a Python int): numba compiles
# a callee once more for each literal argument value it is called with.
_BLOCK0, _BLOCK1 = np.int64(0), np.int64(1)
_BLACK, _WHITE = np.int64(0), np.int64(1)


@jit
def _below_bit(below, equal, r, t):
    """One more bit of every lane's ``U`` (``r``) and threshold (``t``), from the least
    significant: ``below`` where ``U``'s bits so far are below ``P``'s, ``equal`` where equal."""
    differ = np.uint32(t ^ r)
    return np.uint32((t & (r ^ ALL_ONES)) | ((differ ^ ALL_ONES) & below)), np.uint32(equal & (differ ^ ALL_ONES))


@jit
def _plane(thr, k, dE4):
    """Bit plane ``k`` of each lane's threshold: P4's where ``dE4`` is set, else P8's."""
    return np.uint32((thr[k] & dE4) | (thr[k + _U(32)] & (dE4 ^ ALL_ONES)))


@jit
def draw_block(half_sweep, site, group, block, seed, key):
    """Philox block ``block`` of word ``site`` of a multi-spin group: counter
    ``(half_sweep, site, group, block)``. Blocks 0 and 1 are the bit planes of
    :func:`decide_head`, blocks from 2 the lanes' own words of :func:`finish_lanes`.

    Philox's first round multiplies counter words 0 and 2 and XORs 1 and 3 into its output.
    Words 0 and 2 are the half-sweep and the group, the same for every word a GPU block
    updates: that round's products, and the second round's product of the block number,
    are computed once per thread, not per word (8 of the 40 products of a word's two blocks).
    """
    return philox4x32(half_sweep, site, group, block, seed, key)


@jit
def finish_lanes(undecided, dE4, thr, tbase, seed, key, half_sweep, site, group):
    """The lanes of ``undecided`` (those :func:`decide_head` left: ``U``'s top 8 bits equal
    ``P``'s) that accept, each from a 32-bit word of its own.

    The ``m``-th lane of ``undecided`` (from the least significant) accepts when the top 24
    bits of word ``m % 4`` of block ``HEAD_BLOCKS + m // 4`` are below the low 24 bits of its
    threshold (``thr[tbase + 64 + slot]``, or ``+ 96 + slot`` where ``dE4`` is not set: the
    lanes' dE = 8 thresholds; ``slot`` as :func:`lane_slots`). One Philox block per word
    unless it has more than four such lanes (probability ~2e-7).
    """
    unused = np.uint32(0)  # no words drawn yet: the first lane draws block HEAD_BLOCKS
    return finish_drawn(undecided, dE4, thr, tbase, unused, unused, unused, unused, np.int64(HEAD_BLOCKS), unused, seed,
                        key, half_sweep, site, group)


@jit
def finish_drawn(undecided, dE4, thr, tbase, r0, r1, r2, r3, block, left, seed, key, half_sweep, site, group):
    """:func:`finish_lanes` with the last ``left`` words of a block already drawn (``r0`` first,
    the others after it in turn), the next block to draw being ``block``.

    ``left = 0`` draws block ``HEAD_BLOCKS`` when a lane needs it (:func:`finish_lanes`); a
    kernel that drew block ``HEAD_BLOCKS`` ahead passes its four words, ``left = 4`` and
    ``block = HEAD_BLOCKS + 1``. Same lanes, same words, same decisions.
    """
    accepted = np.uint32(0)
    block = np.int64(block)
    left = np.uint32(left)  # words of the block drawn last not used yet
    while undecided != 0:
        if left == 0:
            r0, r1, r2, r3 = draw_block(half_sweep, site, group, block, seed, key)
            block += 1
            left = np.uint32(4)
        v = r0
        r0, r1, r2 = r1, r2, r3  # the block's words in turn, with no branch
        left = np.uint32(left - _ONE)
        low = np.uint32(undecided & (np.uint32(undecided - _ONE) ^ ALL_ONES))  # the lowest lane left
        slot = np.uint32(np.uint32(low * _DE_BRUIJN) >> _SLOT_SHIFT)  # of the lane's thresholds
        p = thr[_U(tbase) + _U(_LANE_THRESHOLDS + slot + (np.uint32(0) if low & dE4 else np.uint32(32)))]
        if np.uint32(v >> np.uint32(32 - _LOW_BITS)) < np.uint32(p & _LOW_MASK):
            accepted |= low
        undecided = np.uint32(undecided ^ low)
    return accepted


@jit
def decide_head(s, up, down, same, side, thr, tbase, seed, key, half_sweep, site, group):
    """Classify the lanes of word ``s`` by its four neighbour words (``side`` already moved
    across a strip edge) and compare the top 8 bits of the ``dE > 0`` lanes' ``U`` with their
    thresholds' (Philox blocks 0 and 1 of ``site``, both always read: no branch, so a GPU
    runs their two generators side by side).

    Returns ``(flip, undecided, dE4)``: the lanes decided to flip so far (``dE <= 0``, or
    ``U``'s top bits below ``P``'s), and the lanes whose top bits equal ``P``'s with those of
    them at dE = 4: finish them with :func:`finish_lanes` (the same ``site``).
    """
    a0, a1, a2, a3 = draw_block(half_sweep, site, group, _BLOCK0, seed, key)
    b0, b1, b2, b3 = draw_block(half_sweep, site, group, _BLOCK1, seed, key)
    return decide_drawn(s, up, down, same, side, thr, tbase, a0, a1, a2, a3, b0, b1, b2, b3)


@jit
def decide_drawn(s, up, down, same, side, thr, tbase, a0, a1, a2, a3, b0, b1, b2, b3):
    """:func:`decide_head` with its two Philox blocks already drawn: ``a0..a3`` block 0 and
    ``b0..b3`` block 1 of the word's site (a kernel may draw them before it reads the word
    and its neighbours, as they depend on neither)."""
    flip, dE4, dE8 = classify(np.uint32(s ^ up), np.uint32(s ^ down), np.uint32(s ^ same), np.uint32(s ^ side))
    # from the least significant of the 8 bits: below = top bits of U below P's so far
    below, equal = np.uint32(0), ALL_ONES
    k = _U(tbase)
    below, equal = _below_bit(below, equal, b3, _plane(thr, k + _U(7), dE4))
    below, equal = _below_bit(below, equal, b2, _plane(thr, k + _U(6), dE4))
    below, equal = _below_bit(below, equal, b1, _plane(thr, k + _U(5), dE4))
    below, equal = _below_bit(below, equal, b0, _plane(thr, k + _U(4), dE4))
    below, equal = _below_bit(below, equal, a3, _plane(thr, k + _U(3), dE4))
    below, equal = _below_bit(below, equal, a2, _plane(thr, k + _U(2), dE4))
    below, equal = _below_bit(below, equal, a1, _plane(thr, k + _U(1), dE4))
    below, equal = _below_bit(below, equal, a0, _plane(thr, k, dE4))
    candidates = np.uint32(dE4 | dE8)
    undecided = np.uint32(equal & candidates)
    return np.uint32(flip | (below & candidates)), undecided, np.uint32(undecided & dE4)


@jit
def update_word_head(lat, base, tbase, c, y, j, L, S, strips, thr, seed, key, half_sweep, group):
    """:func:`decide_head` for word ``(y, j)`` of colour ``c``, its neighbours read from ``lat``;
    nothing written.

    Returns ``(index, word, flip, undecided, dE4)``: the word's array index and value, then
    :func:`decide_head`'s three masks (site ``y S + j``).
    """
    w, s, up, down, same, side = _word_with_neighbours(lat, base, c, y, j, L, S, strips)
    flip, undecided, dE4 = decide_head(s, up, down, same, side, thr, tbase, seed, key, half_sweep, y * S + j, group)
    return w, s, flip, undecided, dE4


@jit
def update_word(lat, base, tbase, c, y, j, L, S, strips, thr, seed, key, half_sweep, group):
    """Metropolis update of word ``(y, j)`` of colour ``c`` of the group stored from ``lat[base]``
    (thresholds from ``thr[tbase]``); returns the flipped lanes."""
    w, s, flip, undecided, dE4 = update_word_head(lat, base, tbase, c, y, j, L, S, strips, thr, seed, key, half_sweep,
                                                  group)
    if undecided != 0:
        flip |= finish_lanes(undecided, dE4, thr, tbase, seed, key, half_sweep, y * S + j, group)
    lat[w] = np.uint32(s ^ flip)
    return flip


@jit
def _update_site(lat, base, c, y, h, L, S, p4, p8, u):
    up, down, same, side, _ = neighbours(lat, base, c, y, h, L, S)
    w = _at(base, _row(c, _I(y), L, S) + _I(h))
    s = np.int32(lat[w])
    dE = 2 * s * (np.int32(up) + np.int32(down) + np.int32(same) + np.int32(side))
    if dE <= 0 or u < (p4 if dE == 4 else p8):
        lat[w] = -s
        return 1
    return 0


@jit
def update_quad(lat, base, tbase, c, y, q, L, S, strips, thr, seed, key, half_sweep, group):
    """int8 update of sites ``4q .. 4q + 3`` of row ``y`` of colour ``c``; returns the number
    of flips. ``strips`` is unused."""
    h = 4 * q
    p4 = thr[_U(tbase)]
    p8 = thr[_U(tbase + 1)]
    r0, r1, r2, r3 = philox4x32(half_sweep, _BLOCK0, y * ((S + 3) // 4) + q, group, seed, key)
    flips = _update_site(lat, base, c, y, h, L, S, p4, p8, r0)
    if h + 1 < S:
        flips += _update_site(lat, base, c, y, h + 1, L, S, p4, p8, r1)
    if h + 2 < S:
        flips += _update_site(lat, base, c, y, h + 2, L, S, p4, p8, r2)
    if h + 3 < S:
        flips += _update_site(lat, base, c, y, h + 3, L, S, p4, p8, r3)
    return flips


#: Bit 7 of every byte of a word: the sign bit of four int8 spins (set = spin down).
_SIGNS = np.uint32(0x80808080)
_BYTE = np.uint32(8)
_BYTES3 = np.uint32(24)
_SITES = np.uint32(0x01010101)
_FLIP_BYTE = np.uint32(0xFE)  # +1 (0x01) XOR 0xFE = -1 (0xFF) and back
_BIT7, _BIT15, _BIT23, _BIT31 = np.uint32(7), np.uint32(15), np.uint32(23), np.uint32(31)


@jit
def _accepts(one, bit, u, p4, p8):
    """Bit ``bit`` (bit 7 of a site's byte) if the site's uniform ``u`` is below its threshold
    (``p4`` where ``one`` has that bit set, i.e. ``dE = 4``, else ``p8``)."""
    t = p4 if (one >> bit) & _ONE else p8
    return np.uint32(_ONE << bit) if u < t else np.uint32(0)


@jit
def update_quad_words(words, base, tbase, c, y, q, L, Q, thr, seed, key, half_sweep, group):
    """:func:`update_quad` for ``S = 4 Q``, four sites at once (SWAR): the quad is word
    ``base + (c L + y) Q + q`` of ``words``, a uint32 view of the int8 lattice (site ``4q + k``
    is byte ``k``; +1 = 0x01, -1 = 0xFF, so bit 7 of a byte is the spin). Same random
    numbers, same decisions, same result as :func:`update_quad`; returns the number of flips.
    """
    q = _I(q)
    o = 1 - c
    y_up, y_down = _rows_around(y, L)
    row = _row(o, y, L, Q)  # the other colour's row y
    at = _at(base, _row(c, y, L, Q) + q)
    s = words[at]
    up = words[_at(base, _row(o, y_up, L, Q) + q)]
    down = words[_at(base, _row(o, y_down, L, Q) + q)]
    same = words[_at(base, row + q)]
    if _odd(y, c):  # sites 4q + k + 1: bytes 1..3 of `same`, byte 0 of the next word
        nxt = _I(q + _ONE)
        side = np.uint32((same >> _BYTE) | (words[_at(base, row + (nxt if nxt != _I(Q) else _I(0)))] << _BYTES3))
    else:  # sites 4q + k - 1: byte 3 of the previous word, bytes 0..2 of `same`
        side = np.uint32((same << _BYTE) | (words[_at(base, row + (q - _ONE if q != 0 else _I(Q) - _ONE))] >> _BYTES3))
    two_or_more, one, _ = classify(np.uint32(s ^ up), np.uint32(s ^ down), np.uint32(s ^ same), np.uint32(s ^ side))
    p4 = thr[_U(tbase)]
    p8 = thr[_U(tbase + 1)]
    r0, r1, r2, r3 = philox4x32(half_sweep, _BLOCK0, y * Q + q, group, seed, key)
    flip = np.uint32((two_or_more & _SIGNS) | _accepts(one, _BIT7, r0, p4, p8) | _accepts(one, _BIT15, r1, p4, p8)
                     | _accepts(one, _BIT23, r2, p4, p8) | _accepts(one, _BIT31, r3, p4, p8))
    flip = np.uint32(flip >> _BIT7)  # bit 0 of each flipped site's byte
    words[at] = np.uint32(s ^ np.uint32(flip * _FLIP_BYTE))
    return np.uint32(flip * _SITES) >> _BYTES3  # the bytes' sum


@jit
def anti_aligned(lat, base, y, j, L, S, strips):
    """Bit planes ``(ones, twos, fours)`` of the number of anti-aligned neighbours of black word ``(y, j)``."""
    _, _, x0, x1, x2, x3 = _word_and_neighbours(lat, base, _BLACK, y, j, L, S, strips)
    return sum_of_four(x0, x1, x2, x3)


@jit
def site_counts(lat, base, k, L, S):
    """int8 row ``k`` of the black sites: ``(down spins in both colours' row k, anti-aligned bonds)``."""
    down = 0
    anti = 0
    for h in range(S):
        up, dn, same, side, _ = neighbours(lat, base, _BLACK, k, h, L, S)
        s = np.int32(lat[_at(base, _row(_BLACK, k, L, S) + _I(h))])
        anti += (4 - s * (np.int32(up) + np.int32(dn) + np.int32(same) + np.int32(side))) // 2
        down += (1 - s) // 2 + (1 - np.int32(lat[_at(base, _row(_WHITE, k, L, S) + _I(h))])) // 2
    return down, anti


@jit
def measurement(N, down, anti, flips):
    """``(e, m, acceptance)`` of a lattice of ``N`` spins from its counts: ``e = (2 anti - 2 N) / N``
    (energy per spin), ``m = (N - 2 down) / N``, acceptance ``flips / N``."""
    return (2.0 * anti - 2.0 * N) / N, (N - 2.0 * down) / N, flips / N


@jit
def bin_of(i, n_bins, n_measurements):
    """The bin of measurement ``i`` of ``n_measurements`` in ``n_bins`` equal bins."""
    return i * n_bins // n_measurements


@jit
def add_to_bin(sums, e, m, acceptance):
    """Add a measurement to a bin's ``sums`` of e, e^2, |m|, m^2, m^4, acceptance (6 values).

    The CUDA kernels add with their own copy (``kernels.cuda_runner``'s ``add_to_bin``), whose
    products are never fused with the sums into FMAs: the same sums, bit for bit.
    """
    m2 = m * m
    sums[0] += e
    sums[1] += e * e
    sums[2] += abs(m)
    sums[3] += m2
    sums[4] += m2 * m2
    sums[5] += acceptance


@jit
def record(bins, series, system, i, n_measurements, N, down, anti, flips):
    """Add measurement ``i`` of ``system`` (its counts, :func:`measurement`) to its bin
    (:func:`add_to_bin`) and time series."""
    e, m, acceptance = measurement(N, down, anti, flips)
    add_to_bin(bins[system, bin_of(i, bins.shape[1], n_measurements)], e, m, acceptance)
    if series.shape[1] > 0:
        series[system, i, 0] = e
        series[system, i, 1] = m
