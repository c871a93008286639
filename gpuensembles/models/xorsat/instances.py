"""3-XORSAT instances: the 3-spin model on random 3-regular 3-uniform hypergraphs.

An instance has ``N`` binary variables ``x_i in {0, 1}`` (spin ``sigma_i = 1 - 2 x_i``)
and ``M`` triplets. Every variable lies in exactly 3 triplets and every triplet holds 3
distinct variables, so counting variable-triplet incidences gives ``3 M = 3 N``:
**M = N for every N**, and N need not be a multiple of 3. Triplet ``a = (i, j, k)`` with
parity bit ``b_a`` is satisfied when ``x_i ^ x_j ^ x_k == b_a`` (``sigma_i sigma_j
sigma_k = J_a`` with ``J_a = 1 - 2 b_a``); the energy is the number of unsatisfied
triplets. The solutions form an affine GF(2) space of ``2**nullity`` configurations.

**Layout of one instance** (the contract with the solver, :mod:`gpuensembles.xorsat.solver`):
dims ``triplet`` (M = N), ``corner`` (3), ``variable`` (N)

* ``triplets`` (triplet, corner) int32 -- 0-based variable indices
* ``parity`` (triplet) uint8 -- ``b_a`` in {0, 1}
* ``planted`` (variable) uint8 -- a solution (bits); absent for instances loaded from
  text files, which carry no solution
* scalar coordinate ``N`` (int64) and attrs ``N``, ``seed``, ``index``, ``gauge``
  (0/1), ``nullity``, ``ground_states`` (``"2**nullity"``), ``generator``. Read the size
  from ``attrs["N"]`` (or ``ds["N"]``), not from ``sizes["variable"]``, which is missing
  when there is no ``planted``.

Generated instances are canonical: each triplet sorted ascending, triplets sorted
lexicographically. :func:`random_instances` stacks many instances over dims ``N`` and
``instance``, padded to the largest N; :func:`select_instance` takes one back out.

**Generator.** Configuration model with rejection: the ``3 N`` stubs (each variable 3 times) are
shuffled with ``numpy.random.Generator.permutation`` and cut into N consecutive
triplets; the draw is repeated until no triplet repeats a variable and no two triplets
are equal as sets (accepted with probability about ``exp(-2) = 0.135``, so a few
draws on average; RuntimeError after ``MAX_TRIES = 10000``). Every simple hypergraph
arises from the same number of permutations, so they are sampled uniformly. The
generator is ``np.random.default_rng(np.random.SeedSequence([seed, N, index]))``, so instance
``index`` of size N depends only on ``(seed, N, index)``. With ``gauge=True`` a uniform
random ``planted`` bit vector is then drawn from the same generator and
``b_a = XOR of planted over the triplet``; with ``gauge=False`` the model is the
ferromagnet (``planted = 0``, all ``b_a = 0``) on the *same* hypergraph.

**Sizes.** ``N_MIN = 4 <= N <= N_MAX = 65536``. No such hypergraph exists for N <= 3 (N = 3
would need the one possible triplet three times); N = 4 has exactly one, all four
triplets of 4 variables, which the generator accepts with probability 0.084 per draw;
N = 5 has twelve (the complements of the 5-cycles), accepted with probability 0.067.
For large N about 13% of the draws are accepted. The cap comes from :func:`nullity`,
which every generated instance records: about 0.03 s at N = 2048, 1 s at N = 16384 and
35-45 s at N = 65536 (roughly N**2.5 to N**3); the solver's useful range is far below.

**Files.** :func:`save_instance` / :func:`load_instance` choose by extension: ``.nc`` is NetCDF
(xarray), anything else (``.xnf``, ``.cnf``, ...) is the extended-DIMACS XOR-clause
text CryptoMiniSat reads: ``p cnf N M`` then one ``x<lit> <lit> <lit> 0`` per triplet,
meaning the XOR of the three literals is TRUE (``-v`` is the negated bit ``x_v ^ 1``).
"""

import operator
import os
import re
import secrets
from pathlib import Path

import numpy as np
import xarray as xr

from ...core.validation import check_memory

__all__ = [
    "N_MIN",
    "N_MAX",
    "MAX_TRIES",
    "random_instance",
    "random_instances",
    "select_instance",
    "nullity",
    "check_instance",
    "energy",
    "save_instance",
    "load_instance",
]

N_MIN = 4
N_MAX = 65536
MAX_TRIES = 10_000

GENERATOR = (
    "configuration model with rejection: 3N stubs (each variable 3 times) shuffled by "
    "numpy.random.Generator.permutation, cut into N consecutive triplets, redrawn until no "
    "triplet repeats a variable and no two triplets are equal; "
    "rng = numpy.random.default_rng(SeedSequence([seed, N, index])); gauge=1: planted = "
    "rng.integers(0, 2, N) drawn after the hypergraph, parity = XOR of planted over each "
    "triplet; gauge=0: planted = 0, parity = 0; canonical order (triplets sorted, then "
    "sorted lexicographically)"
)

_INT_ATTRS = ("seed", "index", "gauge")


# --------------------------------------------------------------------------- validation


def _integer(name, value, minimum, maximum=None) -> int:
    """``value`` as int if it is an integer in [minimum, maximum], else ValueError."""
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None
    if v < minimum or (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return int(v)


def _check_N(N) -> int:
    return _integer("N", N, N_MIN, N_MAX)


def _check_seed(seed) -> int:
    if seed is None:
        return secrets.randbits(32)
    return _integer("seed", seed, 0, 2**32 - 1)


def _check_gauge(gauge) -> bool:
    if isinstance(gauge, (bool, np.bool_)) or (isinstance(gauge, (int, np.integer)) and gauge in (0, 1)):
        return bool(gauge)
    raise ValueError(f"gauge must be True or False, got {gauge!r}")


def _check_sizes(N) -> tuple[list[int], bool]:
    """``(sizes, scalar)`` from an int or a 1-D sequence of distinct ints."""
    if isinstance(N, (str, bytes)):
        raise ValueError(f"N must be an integer or a 1-D sequence of distinct integers, got {N!r}")
    try:
        np.ndim(N)
    except ValueError:  # ragged nesting
        raise ValueError(f"N must be an integer or a 1-D sequence of distinct integers, got {N!r}") from None
    if np.ndim(N) == 0:
        return [_check_N(N)], True
    if np.ndim(N) != 1 or len(N) == 0:
        raise ValueError(f"N must be an integer or a non-empty 1-D sequence of distinct integers, got {N!r}")
    sizes = [_check_N(n) for n in N]
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"N must not repeat a size, got {list(N)!r}")
    return sizes, False


# --------------------------------------------------------------------------- generation


def _canonical(triplets: np.ndarray, parity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each triplet ascending, then the triplets lexicographically (parity follows)."""
    t = np.sort(triplets, axis=1)
    order = np.lexsort((t[:, 2], t[:, 1], t[:, 0]))
    return t[order], parity[order]


def _hypergraph(N: int, rng: np.random.Generator) -> np.ndarray:
    """Canonical (sorted) triplets of a simple 3-regular 3-uniform hypergraph, shape (N, 3)."""
    stubs = np.repeat(np.arange(N, dtype=np.int32), 3)
    for _ in range(MAX_TRIES):
        t = np.sort(rng.permutation(stubs).reshape(N, 3), axis=1)
        if np.any((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2])):
            continue
        t = t[np.lexsort((t[:, 2], t[:, 1], t[:, 0]))]
        if np.any(np.all(t[1:] == t[:-1], axis=1)):
            continue
        return t
    raise RuntimeError(f"no simple 3-regular 3-uniform hypergraph with N={N} after {MAX_TRIES} draws")


def _instance_dataset(triplets, parity, planted, attrs) -> xr.Dataset:
    data = {
        "triplets": (("triplet", "corner"), np.asarray(triplets, dtype=np.int32)),
        "parity": (("triplet",), np.asarray(parity, dtype=np.uint8)),
    }
    if planted is not None:
        data["planted"] = (("variable",), np.asarray(planted, dtype=np.uint8))
    return xr.Dataset(data, coords={"N": np.int64(attrs["N"])}, attrs=attrs)


def random_instance(N: int, seed: int | None = None, *, gauge: bool = True, index: int = 0) -> xr.Dataset:
    """One random 3-regular 3-XORSAT instance with a planted solution.

    Parameters
    ----------
    N : int
        Number of variables (= number of triplets), ``N_MIN = 4 <= N <= N_MAX = 65536``.
    seed : int in [0, 2**32), optional
        Master seed; ``None`` draws one from the OS (recorded in ``attrs["seed"]``).
    gauge : bool
        True: uniformly random planted solution and matching parities. False: the
        ferromagnet, ``planted = 0`` and all parities 0, on the same hypergraph.
    index : int >= 0
        Instance number; the instance depends only on ``(seed, N, index)``.

    Returns
    -------
    xarray.Dataset
        ``triplets`` (triplet, corner) int32, ``parity`` (triplet) uint8, ``planted``
        (variable) uint8, scalar coordinate ``N``; attrs ``N``, ``seed``, ``index``,
        ``gauge``, ``nullity``, ``ground_states``, ``generator`` (see the module docstring).
    """
    N = _check_N(N)
    seed = _check_seed(seed)
    gauge = _check_gauge(gauge)
    index = _integer("index", index, 0)
    rng = np.random.default_rng(np.random.SeedSequence([seed, N, index]))
    t = _hypergraph(N, rng)
    if gauge:
        planted = rng.integers(0, 2, size=N, dtype=np.uint8)
        parity = planted[t[:, 0]] ^ planted[t[:, 1]] ^ planted[t[:, 2]]
    else:
        planted = np.zeros(N, dtype=np.uint8)
        parity = np.zeros(N, dtype=np.uint8)
    k = nullity(t, N)
    attrs = {"N": N, "seed": seed, "index": index, "gauge": int(gauge), "nullity": k,
             "ground_states": f"2**{k}", "generator": GENERATOR}
    return _instance_dataset(t, parity, planted, attrs)


def random_instances(N, count: int, seed: int | None = None, *, gauge: bool = True) -> xr.Dataset:
    """``count`` instances for each size in ``N``, stacked and padded.

    Instance ``i`` of size ``n`` is exactly ``random_instance(n, seed, gauge=gauge,
    index=i)``; take it back out with :func:`select_instance`.

    Parameters
    ----------
    N : int or 1-D sequence of distinct ints
        Sizes (kept in the order given), each in ``[N_MIN, N_MAX]``.
    count : int >= 1
        Instances per size.
    seed : int in [0, 2**32), optional
        Master seed shared by all instances; ``None`` draws one from the OS.
    gauge : bool
        As in :func:`random_instance`.

    Returns
    -------
    xarray.Dataset
        Dims (``N``,) ``instance``, ``triplet``, ``corner``, ``variable`` with ``triplet``
        and ``variable`` of size ``max(N)``: ``triplets`` int32 (padding -1), ``parity``
        and ``planted`` uint8 (padding 0), ``nullity`` int64 over (``N``,) ``instance``.
        ``N`` is a dimension coordinate for a sequence, a scalar coordinate for an int;
        ``instance`` is ``0 .. count-1``. attrs ``seed``, ``gauge``, ``generator``.
    """
    sizes, scalar = _check_sizes(N)
    count = _integer("count", count, 1)
    seed = _check_seed(seed)
    gauge = _check_gauge(gauge)
    L = max(sizes)
    # per instance: triplets (int32), parity and planted (uint8), nullity (int64)
    check_memory(len(sizes) * count * (14 * L + 8), f"count={count} instances of each of N={sizes}")
    triplets = np.full((len(sizes), count, L, 3), -1, dtype=np.int32)
    parity = np.zeros((len(sizes), count, L), dtype=np.uint8)
    planted = np.zeros((len(sizes), count, L), dtype=np.uint8)
    nul = np.zeros((len(sizes), count), dtype=np.int64)
    for a, n in enumerate(sizes):
        for i in range(count):
            one = random_instance(n, seed, gauge=gauge, index=i)
            triplets[a, i, :n] = one["triplets"].values
            parity[a, i, :n] = one["parity"].values
            planted[a, i, :n] = one["planted"].values
            nul[a, i] = one.attrs["nullity"]
    dims = ("N", "instance")
    coords = {"N": ("N", np.asarray(sizes, dtype=np.int64)), "instance": np.arange(count, dtype=np.int64)}
    if scalar:
        triplets, parity, planted, nul = triplets[0], parity[0], planted[0], nul[0]
        dims = ("instance",)
        coords["N"] = np.int64(sizes[0])
    return xr.Dataset(
        {
            "triplets": ((*dims, "triplet", "corner"), triplets),
            "parity": ((*dims, "triplet"), parity),
            "planted": ((*dims, "variable"), planted),
            "nullity": (dims, nul),
        },
        coords=coords,
        attrs={"seed": seed, "gauge": int(gauge), "generator": GENERATOR},
    )


def select_instance(instances: xr.Dataset, N: int | None = None, instance: int | None = None) -> xr.Dataset:
    """One unpadded instance, in the single-instance layout, from :func:`random_instances`.

    Parameters
    ----------
    instances : xarray.Dataset
        Output of :func:`random_instances` (or a NetCDF copy of it).
    N : int, optional
        Size to take (a value of the ``N`` coordinate, not a position); may be omitted
        when ``instances`` holds a single size.
    instance : int, optional
        Value of the ``instance`` coordinate; may be omitted when there is one per size.

    Returns
    -------
    xarray.Dataset
        Identical to ``random_instance(N, seed, gauge=gauge, index=instance)``.
    """
    if not isinstance(instances, xr.Dataset):
        raise TypeError(f"instances must be an xarray.Dataset from random_instances, got {type(instances).__name__}")
    if "N" not in instances.coords or "instance" not in instances.dims:
        raise ValueError("instances must come from random_instances (coordinates 'N' and 'instance')")
    sizes = np.atleast_1d(instances["N"].values)
    if N is None:
        if sizes.size != 1:
            raise ValueError(f"N must be given: instances holds sizes {sizes.tolist()}")
        N = int(sizes[0])
    N = _check_N(N)
    if N not in sizes:
        raise ValueError(f"N must be one of the sizes held, {sizes.tolist()}, got {N}")
    if instance is None:
        if instances.sizes["instance"] != 1:
            raise ValueError(f"instance must be given: instances holds {instances.sizes['instance']} per size")
        instance = int(instances["instance"].values[0])
    instance = _integer("instance", instance, 0)
    if instance not in instances["instance"].values:
        raise ValueError(f"instance must be one of {instances['instance'].values.tolist()}, got {instance}")
    one = instances.sel(instance=instance)
    if "N" in one.dims:
        one = one.sel(N=N)
    k = int(one["nullity"].values)
    attrs = {"N": N, "seed": int(instances.attrs["seed"]), "index": instance,
             "gauge": int(instances.attrs["gauge"]), "nullity": k, "ground_states": f"2**{k}",
             "generator": str(instances.attrs["generator"])}
    return _instance_dataset(one["triplets"].values[:N], one["parity"].values[:N], one["planted"].values[:N], attrs)


# --------------------------------------------------------------------------- algebra


def nullity(triplets, N: int) -> int:
    """GF(2) nullity ``N - rank`` of the M x N triplet-variable incidence matrix.

    Row ``a`` has ones at the variables of triplet ``a``, so a satisfiable instance has
    ``2**nullity`` solutions (an unsatisfiable one has none). Gaussian elimination with
    Python ints as bit rows (a basis keyed by leading bit): ~0.03 s at N = 2048, ~1 s at
    N = 16384, ~40 s at N = 65536. Any number of rows is accepted; a variable repeated inside a row cancels.

    Parameters
    ----------
    triplets : array_like of int, shape (M, 3)
        0-based variable indices in ``[0, N)``.
    N : int >= 1
        Number of variables.

    Returns
    -------
    int
        The nullity (number of free variables of the linear system over GF(2)).
    """
    N = _integer("N", N, 1)
    t = np.asarray(triplets)
    if t.ndim != 2 or t.shape[1] != 3 or not (t.size == 0 or np.issubdtype(t.dtype, np.integer)):
        raise ValueError(f"triplets must be an integer array of shape (M, 3), got shape {t.shape} dtype {t.dtype}")
    if t.size and (t.min() < 0 or t.max() >= N):
        raise ValueError(f"triplets must hold variable indices in [0, {N}), got values in [{t.min()}, {t.max()}]")
    return N - _eliminate(t, np.zeros(len(t), dtype=np.uint8))[0]


def satisfiable(triplets, parity) -> bool:
    """Whether some configuration satisfies every triplet (the GF(2) system ``A x = b`` is consistent).

    Parameters
    ----------
    triplets : array_like of int, shape (M, 3)
        0-based variable indices.
    parity : array_like of {0, 1}, shape (M,)
        ``b_a``: triplet ``a`` is satisfied when the XOR of its variables is ``b_a``.
    """
    return _eliminate(np.asarray(triplets), np.asarray(parity))[1]


def _eliminate(t: np.ndarray, parity: np.ndarray) -> tuple:
    """``(rank, consistent)`` of ``A x = b`` by Gaussian elimination over GF(2).

    Rows are Python ints: bit 0 holds ``b_a``, bit ``v + 1`` variable ``v``; a basis keyed
    by leading bit. A row that reduces to ``b = 1`` alone is a contradiction.
    """
    basis: dict[int, int] = {}
    consistent = True
    for (i, j, k), b in zip(t.tolist(), parity.tolist()):
        row = (2 << i) ^ (2 << j) ^ (2 << k) ^ int(b)
        while row > 1:
            lead = row.bit_length() - 1
            pivot = basis.get(lead)
            if pivot is None:
                basis[lead] = row
                break
            row ^= pivot
        consistent &= row != 1
    return len(basis), consistent


def _instance_N(ds: xr.Dataset) -> int:
    """N of a single instance from its coordinate, attrs, ``variable`` size or ``triplet`` size."""
    found = {}
    if "N" in ds.coords:
        if ds["N"].ndim != 0:
            raise ValueError("ds holds several sizes (dimension 'N'): take one with select_instance")
        found["coordinate N"] = ds["N"].values.item()
    if "N" in ds.attrs:
        found["attrs['N']"] = ds.attrs["N"]
    if "variable" in ds.sizes:
        found["the size of dim 'variable'"] = ds.sizes["variable"]
    if "triplet" in ds.sizes:
        found["the size of dim 'triplet' (M = N)"] = ds.sizes["triplet"]
    values = {}
    for where, v in found.items():
        values[where] = _integer(where, v, 1)
    if not values:
        raise ValueError("ds has no 'triplets' / dimension 'triplet'")
    if len(set(values.values())) != 1:
        raise ValueError("inconsistent N: " + ", ".join(f"{w} = {v}" for w, v in values.items())
                         + " (a 3-regular 3-uniform instance has M = N triplets)")
    return next(iter(values.values()))


def _bits(name, values, shape) -> np.ndarray:
    a = np.asarray(values)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if a.size and not (a.dtype == bool or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must hold bits (bool or integer 0/1), got dtype {a.dtype}")
    if a.size and np.any((a != 0) & (a != 1)):
        raise ValueError(f"{name} must hold bits 0/1, got values {np.unique(a)[:8].tolist()}")
    return a.astype(np.uint8)


def check_instance(ds: xr.Dataset) -> xr.Dataset:
    """Validate one instance and return it with normalised dtypes.

    Checks: ``triplets`` (triplet, corner=3) and ``parity`` (triplet) present, a
    single instance (select one from :func:`random_instances` first), consistent N
    (coordinate, attrs, ``variable`` and ``triplet`` sizes: M = N), indices in
    ``[0, N)``, 3 distinct variables per triplet, every variable in exactly 3 triplets,
    no repeated triplet, parity in {0, 1}, and ``planted`` (optional) a solution. The
    order of triplets is not checked, and ``attrs["nullity"]`` is not recomputed.

    Returns
    -------
    xarray.Dataset
        ``ds`` with ``triplets`` int32, ``parity`` and ``planted`` uint8.

    Raises
    ------
    TypeError
        ``ds`` is not an xarray.Dataset.
    ValueError
        Naming the first problem found.
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds must be an xarray.Dataset, got {type(ds).__name__}")
    for name, dims in (("triplets", ("triplet", "corner")), ("parity", ("triplet",)), ("planted", ("variable",))):
        if name not in ds.data_vars:
            if name == "planted":
                continue
            raise ValueError(f"ds has no data variable {name!r} (needs 'triplets' and 'parity')")
        if ds[name].dims != dims:
            hint = " (several instances: take one with select_instance)" if "instance" in ds[name].dims else ""
            raise ValueError(f"{name} must have dims {dims}, got {ds[name].dims}{hint}")
    if ds.sizes["corner"] != 3:
        raise ValueError(f"dim 'corner' must have size 3, got {ds.sizes['corner']}")
    N = _instance_N(ds)
    t = ds["triplets"].values
    if t.size and not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"triplets must be integers, got dtype {t.dtype}")
    if t.min() < 0 or t.max() >= N:
        a = int(np.flatnonzero(np.any((t < 0) | (t >= N), axis=1))[0])
        raise ValueError(f"triplets must hold variable indices in [0, {N}): triplet {a} is {t[a].tolist()}")
    t = t.astype(np.int32)
    s = np.sort(t, axis=1)
    bad = np.flatnonzero((s[:, 0] == s[:, 1]) | (s[:, 1] == s[:, 2]))
    if bad.size:
        raise ValueError(f"triplet {bad[0]} repeats a variable: {t[bad[0]].tolist()}")
    degree = np.bincount(t.ravel(), minlength=N)
    bad = np.flatnonzero(degree != 3)
    if bad.size:
        raise ValueError(f"not 3-regular: variable {bad[0]} is in {degree[bad[0]]} triplets (needs exactly 3)")
    order = np.lexsort((s[:, 2], s[:, 1], s[:, 0]))
    same = np.flatnonzero(np.all(s[order[1:]] == s[order[:-1]], axis=1))
    if same.size:
        a, b = sorted((int(order[same[0]]), int(order[same[0] + 1])))
        raise ValueError(f"triplets {a} and {b} are the same triplet {s[a].tolist()}")
    parity = _bits("parity", ds["parity"].values, (N,))
    out = ds.assign(triplets=(("triplet", "corner"), t), parity=(("triplet",), parity))
    if "planted" in ds.data_vars:
        planted = _bits("planted", ds["planted"].values, (N,))
        wrong = np.flatnonzero((planted[t[:, 0]] ^ planted[t[:, 1]] ^ planted[t[:, 2]]) != parity)
        if wrong.size:
            a = wrong[0]
            raise ValueError(f"planted violates {wrong.size} triplet(s), first triplet {a} = {t[a].tolist()}")
        out = out.assign(planted=(("variable",), planted))
    return out


def energy(ds: xr.Dataset, x) -> np.ndarray:
    """Number of unsatisfied triplets of bit configurations ``x``.

    Parameters
    ----------
    ds : xarray.Dataset
        One instance (``triplets``, ``parity``), not padded.
    x : array_like, shape (..., N)
        Bits (bool or integers 0/1); ``x[..., i]`` is variable ``i``.

    Returns
    -------
    numpy.ndarray of int64, shape ``x.shape[:-1]``
        Energies in ``[0, N]`` (0-d for a single configuration).
    """
    t = np.asarray(ds["triplets"].values, dtype=np.intp)
    parity = np.asarray(ds["parity"].values, dtype=np.uint8)
    N = _instance_N(ds)
    x = np.asarray(x)
    if x.ndim == 0 or x.shape[-1] != N:
        raise ValueError(f"x must have shape (..., {N}), got {x.shape}")
    x = _bits("x", x, x.shape)
    sat = x[..., t[:, 0]] ^ x[..., t[:, 1]] ^ x[..., t[:, 2]]
    return np.count_nonzero(sat != parity, axis=-1).astype(np.int64)


# --------------------------------------------------------------------------- files


def save_instance(ds: xr.Dataset, path) -> None:
    """Write one instance to ``path``, after :func:`check_instance`.

    ``*.nc``: NetCDF4 via xarray, everything kept. Any other extension (``.xnf``,
    ``.cnf``): CryptoMiniSat XOR-clause DIMACS text -- ``c`` comment lines with N, seed,
    index, gauge, nullity and generator (those present), ``p cnf N M``, then per triplet
    ``x<i> <j> <k> 0`` (1-based variables) with the first literal negated when the
    parity is 0. The text form does not store ``planted``.
    """
    ds = check_instance(ds)
    path = Path(path)
    if path.suffix.lower() == ".nc":
        ds.to_netcdf(path)
        return
    N = _instance_N(ds)
    t = ds["triplets"].values.astype(np.int64) + 1
    parity = ds["parity"].values
    lines = [
        "c 3-XORSAT instance: 3-spin model on a 3-regular 3-uniform hypergraph (gpuensembles.xorsat)",
        "c each 'x a b c 0' line: XOR of the three literals is TRUE; literal -v is the negated variable v",
        f"c N = {N}",
    ]
    for key in (*_INT_ATTRS, "nullity"):
        if key in ds.attrs:
            lines.append(f"c {key} = {int(ds.attrs[key])}")
    if "generator" in ds.attrs:
        lines.append(f"c generator = {' '.join(str(ds.attrs['generator']).split())}")
    lines.append(f"p cnf {N} {t.shape[0]}")
    sign = np.where(parity == 1, "", "-")
    lines += [f"x{s}{i} {j} {k} 0" for s, (i, j, k) in zip(sign, t.tolist())]
    path.write_text("\n".join(lines) + "\n")


_COMMENT_ATTR = re.compile(r"^c\s+(\w+)\s*=\s*(.*?)\s*$")


def load_instance(path) -> xr.Dataset:
    """Read an instance written by :func:`save_instance` (or any equivalent XOR-clause file).

    ``*.nc`` is read with ``xarray.load_dataset``. Otherwise the file is parsed as
    DIMACS with XOR clauses: blank lines and ``c`` comment lines anywhere, one header
    ``p cnf N M``, then exactly M lines ``x<lit> <lit> <lit> 0`` (``x`` followed by the
    first literal directly or after spaces); a clause with an odd number of negated
    literals has parity 0, otherwise 1. Comment lines ``c seed = ...``, ``c index =
    ...``, ``c gauge = ...`` and ``c generator = ...`` fill attrs when present; N comes
    from the header and ``nullity`` is recomputed. The result is in canonical order and
    has **no** ``planted`` (hence no ``variable`` dim).

    Returns
    -------
    xarray.Dataset
        One instance, checked by :func:`check_instance`.

    Raises
    ------
    ValueError
        Malformed file (with the line number) or an invalid instance.
    """
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or path-like), got {type(path).__name__} {path!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file" + ("" if path.exists() else " (it does not exist)"))
    try:
        if path.suffix.lower() == ".nc":
            ds = xr.load_dataset(path)
        else:
            return check_instance(_parse_xnf(path.read_text(), os.fspath(path)))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"path {str(path)!r} cannot be read as an instance: {err}") from err
    return check_instance(ds)


def _parse_xnf(text: str, name: str) -> xr.Dataset:
    def fail(lineno, msg):
        where = f"{name}, line {lineno}" if lineno else name
        raise ValueError(f"{where}: {msg}")

    header = None  # (line number, N, M)
    attrs: dict = {}
    clauses: list[tuple[int, int, int]] = []
    parities: list[int] = []
    seen: dict[tuple[int, int, int], int] = {}
    degree: dict[int, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line[0] == "c" and (len(line) == 1 or line[1].isspace()):
            m = _COMMENT_ATTR.match(line)
            if m and m.group(1) in _INT_ATTRS and re.fullmatch(r"[+-]?\d+", m.group(2)):
                attrs[m.group(1)] = int(m.group(2))
            elif m and m.group(1) == "generator":
                attrs["generator"] = m.group(2)
            continue
        if line[0] == "p":
            tokens = line.split()
            if header is not None:
                fail(lineno, f"second header (the first is on line {header[0]})")
            if len(tokens) != 4 or tokens[:2] != ["p", "cnf"] or not all(re.fullmatch(r"\d+", s) for s in tokens[2:]):
                fail(lineno, f"invalid header {line!r} (expected 'p cnf <variables> <clauses>')")
            n, m = int(tokens[2]), int(tokens[3])
            if not N_MIN <= n <= N_MAX:
                fail(lineno, f"the number of variables must be in [{N_MIN}, {N_MAX}], got {n}")
            header = (lineno, n, m)
            continue
        if header is None:
            fail(lineno, f"{line!r} before the header 'p cnf <variables> <clauses>'")
        if line[0] != "x":
            fail(lineno, f"{line!r} is not an XOR clause (expected 'x<lit> <lit> <lit> 0')")
        tokens = line[1:].split()
        try:
            lits = [int(s) for s in tokens]
        except ValueError:
            fail(lineno, f"non-integer token in {line!r}")
        if not lits or lits[-1] != 0:
            fail(lineno, f"missing trailing 0 in {line!r}")
        lits = lits[:-1]
        if 0 in lits:
            fail(lineno, f"0 inside the clause {line!r} (one clause per line)")
        if len(lits) != 3:
            fail(lineno, f"expected an XOR clause of exactly 3 literals, got {len(lits)} in {line!r}")
        n = header[1]
        for v in lits:
            if abs(v) > n:
                fail(lineno, f"variable {abs(v)} out of range 1..{n}")
        vs = tuple(sorted(abs(v) - 1 for v in lits))
        if vs[0] == vs[1] or vs[1] == vs[2]:
            fail(lineno, f"clause {line!r} repeats a variable")
        if vs in seen:
            fail(lineno, f"repeats the triplet of line {seen[vs]}")
        seen[vs] = lineno
        for v in vs:
            degree[v] = degree.get(v, 0) + 1
            if degree[v] > 3:
                fail(lineno, f"not 3-regular: variable {v + 1} is in a 4th triplet")
        clauses.append(vs)
        parities.append(1 ^ (sum(v < 0 for v in lits) & 1))
    if header is None:
        fail(0, "missing header 'p cnf <variables> <clauses>'")
    hline, N, M = header
    if len(clauses) != M:
        fail(hline, f"the header announces {M} clauses but the file has {len(clauses)}")
    for v in range(N):
        if degree.get(v, 0) != 3:
            fail(0, f"not 3-regular: variable {v + 1} is in {degree.get(v, 0)} triplets (needs exactly 3)")
    t, parity = _canonical(np.array(clauses, dtype=np.int32).reshape(-1, 3), np.array(parities, dtype=np.uint8))
    k = nullity(t, N)
    ground_states = f"2**{k}" if satisfiable(t, parity) else "0 (the parities contradict each other)"
    attrs = {"N": N, **attrs, "nullity": k, "ground_states": ground_states}
    return _instance_dataset(t, parity, None, attrs)
