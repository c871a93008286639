"""3-XORSAT instances: generator invariants, determinism, nullity against brute force,
energy, NetCDF and XOR-DIMACS round trips, malformed files and bad arguments."""

import itertools

import numpy as np
import pytest
import xarray as xr

from gpuensembles.models.xorsat import instances as xi
from gpuensembles.models.xorsat.instances import (
    N_MAX,
    N_MIN,
    check_instance,
    energy,
    load_instance,
    nullity,
    random_instance,
    random_instances,
    save_instance,
    select_instance,
)


def all_configurations(N):
    """All 2**N bit vectors, shape (2**N, N), bit i of the row number is variable i."""
    return ((np.arange(2**N)[:, None] >> np.arange(N)) & 1).astype(np.uint8)


def reference_nullity(triplets, N):
    """Independent dense GF(2) elimination on a 0/1 matrix (column by column, row swaps)."""
    A = np.zeros((len(triplets), N), dtype=np.uint8)
    for a, row in enumerate(triplets):
        for i in row:
            A[a, i] ^= 1
    rank = 0
    for col in range(N):
        rows = np.flatnonzero(A[rank:, col]) + rank
        if rows.size == 0:
            continue
        A[[rank, rows[0]]] = A[[rows[0], rank]]
        below = np.flatnonzero(A[rank + 1:, col]) + rank + 1
        A[below] ^= A[rank]
        rank += 1
    return N - rank


def ds_from(triplets, parity, N=None):
    t = np.asarray(triplets)
    attrs = {} if N is None else {"N": N}
    return xr.Dataset({"triplets": (("triplet", "corner"), t), "parity": (("triplet",), np.asarray(parity))},
                      attrs=attrs)


# --------------------------------------------------------------------------- generator


@pytest.mark.parametrize("N", [4, 5, 6, 7, 10, 31, 64, 200])
@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1])
def test_generated_instances_are_valid_and_canonical(N, seed):
    ds = random_instance(N, seed)
    assert ds.sizes == {"triplet": N, "corner": 3, "variable": N}
    t = ds["triplets"].values
    assert t.dtype == np.int32 and ds["parity"].dtype == np.uint8 and ds["planted"].dtype == np.uint8
    assert t.min() >= 0 and t.max() < N
    assert np.all(t[:, 0] < t[:, 1]) and np.all(t[:, 1] < t[:, 2])  # distinct and sorted
    assert np.all(np.bincount(t.ravel(), minlength=N) == 3)
    assert len({tuple(r) for r in t.tolist()}) == N
    assert t.tolist() == sorted(t.tolist())
    assert energy(ds, ds["planted"].values) == 0
    assert set(np.unique(ds["parity"].values)) <= {0, 1}
    assert ds.attrs["N"] == N == int(ds["N"]) and ds.attrs["seed"] == seed and ds.attrs["index"] == 0
    assert ds.attrs["gauge"] == 1
    assert ds.attrs["ground_states"] == f"2**{ds.attrs['nullity']}"
    assert ds.attrs["nullity"] == reference_nullity(t, N)
    check_instance(ds)


def test_smallest_sizes():
    # N = 4: the only simple 3-regular 3-uniform hypergraph is all 4 triplets of 4 variables
    ds = random_instance(4, 11)
    assert ds["triplets"].values.tolist() == [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]
    assert ds.attrs["nullity"] == 0  # J - I is invertible over GF(2)
    # N = 5: complements of the 5-cycles; the generator finds several of them
    found = set()
    for index in range(40):
        t = random_instance(5, 3, index=index)["triplets"].values
        pairs = [tuple(sorted(set(range(5)) - set(row))) for row in t.tolist()]
        degree = np.bincount(np.ravel(pairs), minlength=5)
        assert np.all(degree == 2)  # complement pairs form a 2-regular graph on 5 vertices: C5
        found.add(tuple(map(tuple, t.tolist())))
    assert len(found) > 3
    with pytest.raises(ValueError, match=r"N must be an integer in \[4, 65536\]"):
        random_instance(3, 0)


def test_gauge_false_is_the_ferromagnet_on_the_same_hypergraph():
    for N in (6, 60):
        a = random_instance(N, 5, gauge=False, index=2)
        b = random_instance(N, 5, gauge=True, index=2)
        assert not a["parity"].values.any() and not a["planted"].values.any()
        assert a.attrs["gauge"] == 0
        np.testing.assert_array_equal(a["triplets"].values, b["triplets"].values)
        assert a.attrs["nullity"] == b.attrs["nullity"]


def test_gauge_true_plants_a_nonzero_solution():
    ds = random_instance(60, 9)
    assert ds["planted"].values.any()  # fails with probability 2**-60
    assert ds["parity"].values.any()


def test_determinism_and_index():
    a = random_instance(30, 42, index=3)
    xr.testing.assert_identical(a, random_instance(30, 42, index=3))
    assert not np.array_equal(a["triplets"].values, random_instance(30, 42, index=4)["triplets"].values)
    assert not np.array_equal(a["triplets"].values, random_instance(30, 43, index=3)["triplets"].values)


def test_seed_none_is_drawn_and_recorded():
    ds = random_instance(12)
    assert 0 <= ds.attrs["seed"] < 2**32
    xr.testing.assert_identical(ds, random_instance(12, ds.attrs["seed"]))


def test_random_instances_match_random_instance():
    sizes = [20, 8, 13]
    batch = random_instances(sizes, 3, seed=77)
    assert batch.sizes == {"N": 3, "instance": 3, "triplet": 20, "corner": 3, "variable": 20}
    assert batch["N"].values.tolist() == sizes and batch["instance"].values.tolist() == [0, 1, 2]
    assert batch["nullity"].dims == ("N", "instance") and batch["nullity"].dtype == np.int64
    assert batch.attrs["seed"] == 77 and batch.attrs["gauge"] == 1
    for n, i in itertools.product(sizes, range(3)):
        one = random_instance(n, 77, index=i)
        xr.testing.assert_identical(select_instance(batch, n, i), one)
        padded = batch.sel(N=n, instance=i)
        assert np.all(padded["triplets"].values[n:] == -1)
        assert not padded["parity"].values[n:].any() and not padded["planted"].values[n:].any()
        assert int(padded["nullity"]) == one.attrs["nullity"]
    scalar = random_instances(9, 2, seed=5, gauge=False)
    assert scalar["N"].ndim == 0 and int(scalar["N"]) == 9
    assert scalar["triplets"].dims == ("instance", "triplet", "corner")
    assert scalar["nullity"].dims == ("instance",)
    xr.testing.assert_identical(select_instance(scalar, instance=1), random_instance(9, 5, gauge=False, index=1))
    with pytest.raises(ValueError, match="instance must be given"):
        select_instance(scalar)
    with pytest.raises(ValueError, match="N must be given"):
        select_instance(batch, instance=0)
    with pytest.raises(ValueError, match="N must be one of"):
        select_instance(batch, 9, 0)
    with pytest.raises(ValueError, match="instance must be one of"):
        select_instance(batch, 8, 3)


def test_random_instances_netcdf(tmp_path):
    batch = random_instances([6, 10], 2, seed=1)
    batch.to_netcdf(tmp_path / "b.nc")
    back = xr.load_dataset(tmp_path / "b.nc")
    xr.testing.assert_identical(select_instance(back, 10, 1), random_instance(10, 1, index=1))


# --------------------------------------------------------------------------- nullity and energy


@pytest.mark.parametrize("N", range(6, 15))
def test_nullity_counts_solutions_by_brute_force(N):
    x = all_configurations(N)
    rng = np.random.default_rng(N)
    for index in range(3):
        ds = random_instance(N, 123, index=index)
        k = ds.attrs["nullity"]
        assert np.count_nonzero(energy(ds, x) == 0) == 2**k
        # any parity vector: the solutions are none or a coset of the same 2**k kernel
        other = ds.assign(parity=("triplet", rng.integers(0, 2, N).astype(np.uint8)))
        assert np.count_nonzero(energy(other, x) == 0) in (0, 2**k)


def test_nullity_hand_built():
    assert nullity([[0, 1, 2]], 3) == 2
    assert nullity([[0, 1, 2], [1, 2, 3], [0, 3, 4]], 5) == 2
    # rows 1^2 == rows 3^4 = {0, 1, 3, 4}: rank 3 of 4
    assert nullity([[0, 1, 2], [2, 3, 4], [0, 1, 5], [3, 4, 5]], 6) == 3
    assert nullity(np.zeros((0, 3), dtype=int), 5) == 5
    # two disjoint copies of the N = 4 hypergraph: full rank
    k4 = np.array(list(itertools.combinations(range(4), 3)))
    assert nullity(np.concatenate([k4, k4 + 4]), 8) == 0
    # N = 5, complements of a 5-cycle: A x = 0 means x_i ^ x_(i+1) = sum(x) for all i, and the
    # cycle is odd, so x = 0 is the only solution: full rank
    c5 = [sorted(set(range(5)) - {i, (i + 1) % 5}) for i in range(5)]
    assert nullity(c5, 5) == 0
    assert np.count_nonzero(energy(ds_from(c5, [0] * 5), all_configurations(5)) == 0) == 1
    with pytest.raises(ValueError, match=r"triplets must hold variable indices in \[0, 3\)"):
        nullity([[0, 1, 3]], 3)
    with pytest.raises(ValueError, match="shape"):
        nullity([[0, 1]], 3)


@pytest.mark.parametrize("N, seed", [(300, 8), (301, 9), (600, 10)])
def test_nullity_matches_dense_reference(N, seed):
    t = random_instance(N, seed)["triplets"].values
    assert nullity(t, N) == reference_nullity(t, N)
    # repeated rows never raise the rank; dropping rows lowers it by at most one each
    assert nullity(np.concatenate([t, t[:5]]), N) == nullity(t, N)
    sub = t[: N // 2]
    assert nullity(sub, N) == reference_nullity(sub, N) >= N - N // 2


def test_energy_matches_a_loop():
    ds = random_instance(25, 4)
    t, b = ds["triplets"].values, ds["parity"].values
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (4, 7, 25)).astype(np.uint8)
    e = energy(ds, x)
    assert e.shape == (4, 7) and e.dtype == np.int64
    for idx in np.ndindex(4, 7):
        expect = sum(int(x[idx][i] ^ x[idx][j] ^ x[idx][k] != bb) for (i, j, k), bb in zip(t, b))
        assert e[idx] == expect
    np.testing.assert_array_equal(energy(ds, x.astype(bool)), e)
    np.testing.assert_array_equal(energy(ds, x.astype(np.int64)), e)
    assert energy(ds, 1 - ds["planted"].values).shape == ()
    # complementing every bit flips every parity (3 bits per triplet): energy N
    assert energy(ds, 1 - ds["planted"].values) == 25
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 25\)"):
        energy(ds, x[..., :24])
    with pytest.raises(ValueError, match="x must hold bits"):
        energy(ds, 2 * x)


# --------------------------------------------------------------------------- check_instance


def test_check_instance_normalises_and_rejects():
    ds = random_instance(10, 3)
    loose = ds.assign(triplets=ds["triplets"].astype(np.int64), parity=ds["parity"].astype(bool))
    ok = check_instance(loose)
    assert ok["triplets"].dtype == np.int32 and ok["parity"].dtype == np.uint8
    xr.testing.assert_identical(ok, ds)
    t = ds["triplets"].values

    def with_t(new):
        return ds.assign(triplets=(("triplet", "corner"), np.asarray(new)))

    with pytest.raises(ValueError, match="no data variable 'parity'"):
        check_instance(ds.drop_vars("parity"))
    with pytest.raises(ValueError, match=r"variable indices in \[0, 10\)"):
        check_instance(with_t(np.where(t == 9, 10, t)))
    bad = t.copy()
    bad[0, 1] = bad[0, 0]
    with pytest.raises(ValueError, match="repeats a variable"):
        check_instance(with_t(bad))
    moved = t.copy()
    moved[0, 2] = next(v for v in range(10) if v not in t[0])  # t[0, 2] loses a triplet, v gains one
    with pytest.raises(ValueError, match="not 3-regular: variable .* is in [24] triplets"):
        check_instance(with_t(moved))
    with pytest.raises(ValueError, match="parity must hold bits"):
        check_instance(ds.assign(parity=ds["parity"] + 2))
    wrong = ds["planted"].values.copy()
    wrong[0] ^= 1
    with pytest.raises(ValueError, match="planted violates 3 triplet"):
        check_instance(ds.assign(planted=("variable", wrong)))
    with pytest.raises(ValueError, match="inconsistent N"):
        check_instance(ds.assign_attrs(N=11))
    with pytest.raises(ValueError, match="select_instance"):
        check_instance(random_instances(10, 2, seed=0))
    with pytest.raises(ValueError, match="inconsistent N"):
        check_instance(ds.isel(triplet=slice(0, 9)))
    with pytest.raises(TypeError):
        check_instance(ds["triplets"])


def test_check_instance_repeated_triplet():
    # 3-regular on 6 variables, but triplet {0, 1, 2} appears twice
    rep = np.array([[0, 1, 2], [0, 1, 2], [0, 3, 4], [1, 3, 5], [2, 4, 5], [3, 4, 5]])
    assert np.all(np.bincount(rep.ravel(), minlength=6) == 3)
    with pytest.raises(ValueError, match=r"triplets 0 and 1 are the same triplet \[0, 1, 2\]"):
        check_instance(ds_from(rep, np.zeros(6, np.uint8)))
    # two disjoint copies of the N = 4 hypergraph: valid, and any triplet order is accepted
    k4 = np.array(list(itertools.combinations(range(4), 3)))
    check_instance(ds_from(np.concatenate([k4 + 4, k4[:, ::-1]]), np.ones(8, np.uint8)))


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("suffix", [".xnf", ".cnf", ".txt"])
def test_text_round_trip(tmp_path, suffix):
    for N, seed, gauge in [(4, 0, True), (17, 2, True), (40, 9, False)]:
        ds = random_instance(N, seed, gauge=gauge, index=1)
        path = tmp_path / f"i{N}{suffix}"
        save_instance(ds, path)
        text = path.read_text()
        assert f"p cnf {N} {N}\n" in text
        assert f"c seed = {seed}\n" in text and f"c nullity = {ds.attrs['nullity']}\n" in text
        back = load_instance(path)
        assert "planted" not in back and "variable" not in back.dims
        np.testing.assert_array_equal(back["triplets"].values, ds["triplets"].values)
        np.testing.assert_array_equal(back["parity"].values, ds["parity"].values)
        assert back["triplets"].dtype == np.int32 and back["parity"].dtype == np.uint8
        for key in ("N", "seed", "index", "gauge", "nullity", "ground_states", "generator"):
            assert back.attrs[key] == ds.attrs[key], key
        assert int(back["N"]) == N
        assert energy(back, ds["planted"].values) == 0


def test_text_format_lines(tmp_path):
    ds = ds_from([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]], [1, 0, 1, 0], N=4)
    save_instance(ds, tmp_path / "k4.xnf")
    clauses = [s for s in (tmp_path / "k4.xnf").read_text().splitlines() if s.startswith("x")]
    assert clauses == ["x1 2 3 0", "x-1 2 4 0", "x1 3 4 0", "x-2 3 4 0"]


def test_netcdf_round_trip(tmp_path):
    ds = random_instance(33, 2**32 - 1, index=5)
    save_instance(ds, tmp_path / "i.nc")
    back = load_instance(tmp_path / "i.nc")
    xr.testing.assert_identical(back, ds)
    assert back["triplets"].dtype == np.int32 and back["planted"].dtype == np.uint8


HEADER = "p cnf 4 4\n"


def write(tmp_path, text, name="f.xnf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_text_parsing_variants(tmp_path):
    # every writing of the same instance: negations moved around, 'x' separated, clauses
    # shuffled and unsorted, comments and blank lines anywhere, CRLF endings
    canonical = "x1 2 3 0\nx-1 2 4 0\nx1 3 4 0\nx-2 3 4 0\n"
    variants = [
        HEADER + canonical,
        "c hello\n\n" + HEADER + "x 1 2 3 0\nx 1 -2 4 0\nc mid\nx -1 -3 4 0\nx 2 3 -4 0\n",
        HEADER + "x 4 -2 3 0\nx3 2 1 0\nx   4 -1 -3 0\n\tx -4 1 2 0  \n",
        (HEADER + canonical).replace("\n", "\r\n"),
        "c seed = 17\nc gauge = 1\nc N = four\n" + HEADER + "x-1 -2 3 0\n" + canonical.split("\n", 1)[1],
    ]
    expect = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]], [1, 0, 1, 0]
    for k, text in enumerate(variants):
        back = load_instance(write(tmp_path, text, f"v{k}.xnf"))
        assert back["triplets"].values.tolist() == expect[0], k
        assert back["parity"].values.tolist() == expect[1], k
        assert back.attrs["N"] == 4 and back.attrs["nullity"] == 0
        assert ("seed" in back.attrs) == (k == 4)
    assert back.attrs["seed"] == 17 and back.attrs["gauge"] == 1


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "missing header"),
        ("c only a comment\n", "missing header"),
        ("x1 2 3 0\n" + HEADER, r"line 1: 'x1 2 3 0' before the header"),
        ("p cnf 4\nx1 2 3 0\n", "line 1: invalid header"),
        ("p xnf 4 4\n", "line 1: invalid header"),
        ("p cnf four 4\n", "line 1: invalid header"),
        ("p cnf 3 3\n", r"line 1: the number of variables must be in \[4, 65536\]"),
        (HEADER + "x1 2 3 0\n" + HEADER, "line 3: second header"),
        (HEADER + "x1 2 3 0\nx-1 2 4 0\nx1 3 4 0\n", r"line 1: the header announces 4 clauses but the file has 3"),
        (HEADER + "x1 2 3 0\nx-1 2 4 0\nx1 3 4 0\nx-2 3 4 0\nx1 2 3 0\n", "line 6: repeats the triplet of line 2"),
        (HEADER + "x1 2 3 0\nx-1 2 a 0\n", "line 3: non-integer token"),
        (HEADER + "x1 2 3 0\nx1 2 4.0 0\n", "line 3: non-integer token"),
        (HEADER + "x1 2 3 0\nx-1 2 4\n", "line 3: missing trailing 0"),
        (HEADER + "x1 2 3\n", "line 2: missing trailing 0"),
        (HEADER + "x\n", "line 2: missing trailing 0"),
        (HEADER + "1 2 3 0\n", "line 2: '1 2 3 0' is not an XOR clause"),
        (HEADER + "x1 2 0\n", "line 2: expected an XOR clause of exactly 3 literals, got 2"),
        (HEADER + "x1 2 3 4 0\n", "line 2: expected an XOR clause of exactly 3 literals, got 4"),
        (HEADER + "x1 2 0 3 0\n", "line 2: 0 inside the clause"),
        (HEADER + "x1 2 5 0\n", r"line 2: variable 5 out of range 1\.\.4"),
        (HEADER + "x1 -5 2 0\n", r"line 2: variable 5 out of range 1\.\.4"),
        (HEADER + "x1 -1 2 0\n", "line 2: clause 'x1 -1 2 0' repeats a variable"),
        ("p cnf 5 5\nx1 2 3 0\nx1 2 4 0\nx1 3 4 0\nx1 4 5 0\n", "line 5: not 3-regular: variable 1 is in a 4th"),
        # a valid N = 5 instance announced with 6 variables: variable 6 is in no triplet
        ("p cnf 6 5\nx1 2 3 0\nx1 2 4 0\nx1 3 5 0\nx2 4 5 0\nx3 4 5 0\n",
         r"not 3-regular: variable 6 is in 0 triplets \(needs exactly 3\)"),
        ("p cnf 6 6\nx1 2 3 0\nx1 2 4 0\nx1 3 5 0\nx2 4 5 0\nx3 4 5 0\nx-1 2 6 0\n",
         "line 7: not 3-regular: variable 1 is in a 4th"),
    ],
)
def test_malformed_text_files(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_instance(write(tmp_path, text))


def test_valid_n5_file_loads(tmp_path):
    # the same clauses as the two malformed N = 5 / 6 cases above, correctly announced
    back = load_instance(write(tmp_path, "p cnf 5 5\nx1 2 3 0\nx1 2 4 0\nx1 3 5 0\nx2 4 5 0\nx3 4 5 0\n"))
    assert back["triplets"].values.tolist() == [[0, 1, 2], [0, 1, 3], [0, 2, 4], [1, 3, 4], [2, 3, 4]]
    assert back["parity"].values.tolist() == [1] * 5 and back.attrs["nullity"] == 0


def test_save_rejects_invalid_instances(tmp_path):
    bad = ds_from([[0, 1, 2], [0, 1, 2], [0, 3, 4], [1, 3, 5], [2, 4, 5], [3, 4, 5]], [0] * 6)
    for name in ("a.xnf", "a.nc"):
        with pytest.raises(ValueError, match="same triplet"):
            save_instance(bad, tmp_path / name)
        assert not (tmp_path / name).exists()


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("N", [3, 0, -5, N_MAX + 1, 6.0, 6.5, np.float64(8), "6", True, None])
def test_bad_N(N):
    with pytest.raises(ValueError, match=r"N must be an integer (in \[4, 65536\]|or a)"):
        random_instance(N, 0)
    with pytest.raises(ValueError, match=r"N must be an integer (in \[4, 65536\]|or a)"):
        random_instances(N, 1, 0)
    with pytest.raises(ValueError, match="N must be an integer or a non-empty 1-D sequence"):
        random_instances([[6, 8]], 1, 0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: random_instance(6, -1), r"seed must be an integer in \[0, 4294967295\]"),
        (lambda: random_instance(6, 2**32), r"seed must be an integer in \[0, 4294967295\]"),
        (lambda: random_instance(6, 1.5), "seed must be"),
        (lambda: random_instance(6, 0, index=-1), "index must be an integer >= 0"),
        (lambda: random_instance(6, 0, gauge=2), "gauge must be True or False"),
        (lambda: random_instance(6, 0, gauge="yes"), "gauge must be True or False"),
        (lambda: random_instances([6, 8, 6], 1, 0), "N must not repeat a size"),
        (lambda: random_instances([], 1, 0), "non-empty"),
        (lambda: random_instances([6, 2], 1, 0), r"N must be an integer in \[4, 65536\]"),
        (lambda: random_instances([6, 7.5], 1, 0), r"N must be an integer in \[4, 65536\]"),
        (lambda: random_instances(6, 0, 0), "count must be an integer >= 1"),
        (lambda: random_instances(6, 2.0, 0), "count must be an integer >= 1"),
        (lambda: random_instances(6, 1, 2**32), "seed must be"),
        (lambda: nullity([[0, 1, 2]], 0), "N must be an integer >= 1"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_generator_gives_up(monkeypatch):
    monkeypatch.setattr(xi, "MAX_TRIES", 0)
    with pytest.raises(RuntimeError, match="after 0 draws"):
        random_instance(6, 0)


def test_constants():
    assert (N_MIN, N_MAX, xi.MAX_TRIES) == (4, 65536, 10_000)
    assert random_instance(N_MIN, 0).sizes["triplet"] == N_MIN


def test_contradictory_parities_are_reported_on_load(tmp_path):
    inst = random_instance(30, seed=4)  # nullity 1: one linear relation among the parities
    assert xi.satisfiable(inst.triplets.values, inst.parity.values)
    verdicts = []
    for a in range(30):
        parity = inst.parity.values.copy()
        parity[a] ^= 1
        verdicts.append(xi.satisfiable(inst.triplets.values, parity))
    assert 0 < verdicts.count(False) < 30
    a = verdicts.index(False)
    broken = inst.drop_vars("planted")
    broken["parity"][a] ^= 1
    save_instance(broken, tmp_path / "broken.xnf")
    assert load_instance(tmp_path / "broken.xnf").attrs["ground_states"].startswith("0 ")
