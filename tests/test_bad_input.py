"""Hostile input to every public entry point: it runs, or fails with a ValueError or
TypeError naming the parameter. No other exception escapes (no OverflowError, MemoryError,
IndexError, KeyError, AttributeError, numba typing error, ...).

For each registered run function, its registry ``example()`` keyword arguments are taken
and ONE parameter at a time (any of the signature's, defaults included, except ``backend``
and ``progress``) is replaced by a hostile value: NaN, infinities, huge and negative
integers, 2**63, 10**19, strings, None, empty and nested lists, 2-D arrays, complex, bool
and object values. The same is done for every argument of every method of the Dataset
accessors (``.fpt``, ``.ising``, ``.tts``; ``.langevin``'s methods take none), and of the
instance builders and loaders, the test matrices and ``josephson.normalize``. The
hypothesis profile ``ci`` (tests/conftest.py) fixes how many examples are drawn; the counts
tried per entry point are printed at the end of the module (``pytest -s``).

Huge integers are drawn beyond 2**62, where every count has a limit (or the memory check
refuses it), and negative ones down to -1000 or beyond -2**62: a huge but valid request
(``steps=10**15``, a histogram of 10**8 cells) would be a legitimate run of hours or
gigabytes, not a validation hole, and is not drawn.
"""

import inspect
import re
from collections import Counter, defaultdict

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuensembles.core.registry import registered

ENTRIES = {entry.name: entry for entry in registered()}
FIXED = ("backend", "progress")

_HOSTILE_VALUES = [
    float("nan"), float("inf"), -float("inf"), np.float32("nan"), -0.0, 0.0, 0, -1, -1.5, 0.5, 5e-324, 1e308, -1e308,
    2**63, 2**63 - 1, 10**19, 2**64, 10**30, 10**400, -(2**63), 2.0**63, 1e19,
    True, False, np.bool_(True), 1 + 2j, complex("nan"),
    "", "\x00", "0.6", "abc", "auto", "1e6", b"bytes", None, object(), {"a": 1}, (), [], set(),
    [float("nan")], [1.0, float("nan")], [2**63], [10**30], ["a"], ["0.5", "0.6"], [True, False], [None, 1.0],
    [[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0]], [[1], [1, 2]], [1, [2]],
    np.zeros((2, 3)), np.zeros((0,)), np.array([1 + 1j]), np.array([None, 1.0], dtype=object), np.array(["a", "b"]),
    np.array([True]), np.array(5), np.array([np.datetime64("2024-01-01")]),
    xr.DataArray(np.ones((2, 2)), dims=("u", "v")), xr.DataArray([0.1, 0.2], dims="realization"),
]


def hostile():
    """Values a careless or malicious caller might pass for any parameter."""
    return st.one_of(
        st.sampled_from(_HOSTILE_VALUES),
        st.integers(min_value=-1000, max_value=-1),
        st.integers(max_value=-(2**62)),
        st.integers(min_value=2**62 + 1, max_value=2**200),
        st.floats(min_value=1e19, allow_infinity=True, allow_nan=False),
        st.floats(max_value=-1e-300),
        st.text(max_size=8),
        st.lists(st.one_of(st.none(), st.text(max_size=2), st.floats(), st.complex_numbers()), max_size=3),
    )


TRIED = defaultdict(Counter)


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    """Print the cases tried per function and how they ended (``pytest -s`` shows it)."""
    yield
    print("\nhostile-input cases tried per entry point:")
    for name in sorted(TRIED):
        c = TRIED[name]
        print(f"  {name:36s} {sum(c.values()):5d}  (" + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) + ")")


def _parameters(entry) -> list:
    return [p for p in inspect.signature(entry.function).parameters if p not in FIXED]


def _names(message: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", message) is not None


def _check(entry, name, value, tmp_path_factory, monkeypatch):
    kwargs = {**entry.example(), name: value}
    monkeypatch.chdir(tmp_path_factory.getbasetemp())  # a string store= is a directory here
    try:
        result = entry.function(**kwargs, backend="cpu", progress=False)
    except (ValueError, TypeError) as err:
        TRIED[entry.name][type(err).__name__] += 1
        assert type(err) in (ValueError, TypeError), f"{name}={value!r}: {type(err).__name__}: {err}"
        assert _names(str(err), name), f"{name}={value!r}: the message does not name {name!r}: {err}"
        return
    except Exception as err:  # noqa: BLE001  (that is what the test looks for)
        pytest.fail(f"{entry.name}({name}={value!r}) raised {type(err).__name__}: {err}")
    TRIED[entry.name]["returned"] += 1
    assert isinstance(result, xr.Dataset)


@pytest.mark.parametrize("function", sorted(ENTRIES))
def test_hostile_input_runs_or_names_the_parameter(function, tmp_path_factory):
    entry = ENTRIES[function]

    @given(name=st.sampled_from(_parameters(entry)), value=hostile())
    def one(name, value):
        with pytest.MonkeyPatch.context() as monkeypatch:
            _check(entry, name, value, tmp_path_factory, monkeypatch)

    one()
    assert sum(TRIED[function].values()) > 0


# --------------------------------------------------------------------------- accessors


def _accessor_datasets() -> dict:
    """Small results on which every method of every accessor runs with its defaults."""
    import gpuensembles as ge

    cpu = dict(backend="cpu", progress=False, seed=1)
    instances = ge.xorsat.random_instances([24, 30], 2, seed=5)
    return {
        "fpt (escape_times)": ge.escape_times(damping=1.0, gamma=0.5, D=[0.3, 0.35, 0.4, 0.5, 0.6], h=0.01,
                                              model="overdamped", realizations=12, **cpu),
        "fpt (switching_currents)": ge.switching_currents(damping=0.5, D=0.05, dgamma=2e-4, h=0.01, realizations=12,
                                                          **cpu),
        "ising": ge.ising(L=[4, 6], beta=[0.3, 0.45, 0.6], sweeps=8, bins=4, realizations=3, snapshot=True, **cpu),
        "langevin": ENTRIES["langevin"].function(**ENTRIES["langevin"].example(), backend="cpu", progress=False),
        "tts": ge.xorsat.solve(instances, p=0.1, clones=64, runs=4, **cpu),
    }


#: Arguments a method needs besides its defaults.
REQUIRED = {"percentile": {"q": 50}, "from_timeouts": {"time": "sweeps", "timeout": 10**6},
            "plot_snapshot": {"L": 4, "beta": 0.3, "realization": 0}}
ACCESSOR = {"fpt (escape_times)": "fpt", "fpt (switching_currents)": "fpt", "ising": "ising",
            "langevin": "langevin", "tts": "tts"}


@pytest.fixture(scope="module")
def datasets():
    return _accessor_datasets()


def _calls(accessor, ds) -> list:
    """``(method, parameter)`` pairs of the accessor's public methods that run on ``ds`` with their defaults."""
    import matplotlib.pyplot as plt

    pairs = []
    for name, method in inspect.getmembers(type(getattr(ds, accessor)), inspect.isfunction):
        if name.startswith("_"):
            continue
        try:
            getattr(getattr(ds, accessor), name)(**REQUIRED.get(name, {}))
        except ValueError:  # the method is for another kind of result (e.g. theory_cdf of escape times)
            continue
        finally:
            plt.close("all")
        params = [p for p in inspect.signature(method).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        pairs += [(name, p.name) for p in params]
    return pairs


@pytest.mark.parametrize("case", sorted(ACCESSOR))
def test_accessors_run_or_name_the_parameter(case, datasets):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accessor, ds = ACCESSOR[case], datasets[case]
    pairs = _calls(accessor, ds)
    if not pairs:  # the langevin accessor's methods take no arguments: nothing hostile to pass
        assert all(not [p for p in inspect.signature(m).parameters if p != "self"]
                   for n, m in inspect.getmembers(type(ds.langevin), inspect.isfunction) if not n.startswith("_"))
        return

    @given(pair=st.sampled_from(pairs), value=hostile())
    def one(pair, value):
        method, name = pair
        try:
            getattr(getattr(ds, accessor), method)(**{**REQUIRED.get(method, {}), name: value})
        except (ValueError, TypeError) as err:
            TRIED[f"ds.{accessor}"][type(err).__name__] += 1
            assert _names(str(err), name), f"{method}({name}={value!r}): the message does not name {name!r}: {err}"
        except Exception as err:  # noqa: BLE001
            pytest.fail(f"{case}: {method}({name}={value!r}) raised {type(err).__name__}: {err}")
        else:
            TRIED[f"ds.{accessor}"]["returned"] += 1
        finally:
            plt.close("all")

    one()


# --------------------------------------------------------------------------- other entry points


def _entry_points(tmp_dir) -> dict:
    """``{name: (function, baseline kwargs)}``: instance builders and loaders, test matrices, SI units."""
    import gpuensembles as ge
    from gpuensembles.models.mcls import problems

    path = tmp_dir / "one.xnf"
    ge.xorsat.save_instance(ge.xorsat.random_instance(12, seed=1), path)
    return {
        "xorsat.random_instance": (ge.xorsat.random_instance, dict(N=12, seed=1, gauge=True, index=0)),
        "xorsat.random_instances": (ge.xorsat.random_instances, dict(N=[12, 14], count=2, seed=1, gauge=False)),
        "xorsat.select_instance": (ge.xorsat.select_instance, dict(
            instances=ge.xorsat.random_instances([12, 14], 2, seed=1), N=12, instance=1)),
        "xorsat.load_instance": (ge.xorsat.load_instance, dict(path=path)),
        "mcls.problems.laplacian_2d": (problems.laplacian_2d, dict(m=4)),
        "mcls.problems.shifted_laplacian_1d": (problems.shifted_laplacian_1d, dict(n=10, shift=0.5)),
        "josephson.normalize": (ge.josephson.normalize, dict(R=250.0, C=88e-15, Ic=0.748e-6, T=1.2, sweep_rate=200.0,
                                                             h=1e-4)),
    }


ENTRY_POINTS = ("xorsat.random_instance", "xorsat.random_instances", "xorsat.select_instance", "xorsat.load_instance",
                "mcls.problems.laplacian_2d", "mcls.problems.shifted_laplacian_1d", "josephson.normalize")


@pytest.mark.parametrize("case", ENTRY_POINTS)
def test_other_entry_points_run_or_name_the_parameter(case, tmp_path_factory):
    function, base = _entry_points(tmp_path_factory.mktemp("entry"))[case]
    function(**base)  # the baseline runs

    @given(name=st.sampled_from(sorted(base)), value=hostile())
    def one(name, value):
        try:
            function(**{**base, name: value})
        except (ValueError, TypeError) as err:
            TRIED[case][type(err).__name__] += 1
            assert _names(str(err), name), f"{case}({name}={value!r}): the message does not name {name!r}: {err}"
        except Exception as err:  # noqa: BLE001
            pytest.fail(f"{case}({name}={value!r}) raised {type(err).__name__}: {err}")
        else:
            TRIED[case]["returned"] += 1

    one()


# --------------------------------------------------------------------------- command line

#: A small run of every subcommand (its values are replaced one option at a time).
COMMAND_LINES = {
    "escape-times": "--damping 1 --gamma 0.5 --D 0.3 --h 0.01 --model overdamped --realizations 4 --max-steps 20000",
    "escape-rates": "--model overdamped --damping 1 --gamma 0.5 --D 0.3 --h 0.05 --rel-error 0.4",
    "switching-currents": "--damping 0.5 --D 0.05 --dgamma 2e-4 --h 0.01 --realizations 4",
    "retrapping-currents": "--damping 0.3 --D 0.003 --dgamma 2e-4 --h 0.05 --gamma-start 0.8 --realizations 4",
    "langevin": "--a 0 2 --f 0.3 --kT 0.5 --g 2 --h 0.01 --steps 48 --sample-every 12 --histogram 0 1 --realizations 5",
    "kuramoto": "--N 18 --K 2 --h 0.02 --steps 12 --sample-every 4 --kT 0.2 --bins 8 --realizations 3",
    "ising": "--L 4 --beta 0.3 0.5 --sweeps 4 --thermalization 1 --measure-every 2 --bins 2 --realizations 4",
    "xorsat": "--N 24 --p 0.05 0.5 --clones 40 --runs 4 --timeout 12",
    "mc-solve": "--problem laplacian-2d --size 4 --histories 4000 --batches 4",
}

_HOSTILE_TOKENS = ["nan", "inf", "-inf", "-1", "0", "-0", "0.5", "1e400", "-1e400", "1e-400", "9223372036854775808",
                   "1e19", "2e62", "abc", "", " ", "0x10", "1,5", "1_0", "True", "None", "[]", "-abc", "--", "1e",
                   "..", "/", "-2e-7"]  # a negative number in exponent form (the CLI must not take it for an option)


def _large_number(text: str) -> bool:
    try:
        return abs(float(text)) >= 100
    except ValueError:
        return False


def hostile_token():
    """Text a user might type for an option's value.

    As for the API, numbers are drawn beyond every limit (or negative), never huge but
    valid: ``--realizations 300000000`` is a legitimate run of hours, not a validation hole.
    """
    text = st.text(st.characters(exclude_characters="\x00"), max_size=6).filter(lambda s: not _large_number(s))
    integers = st.one_of(st.integers(min_value=-1000, max_value=-1), st.integers(max_value=-(2**63)),
                         st.integers(min_value=2**63, max_value=2**70))
    return st.one_of(st.sampled_from(_HOSTILE_TOKENS), text, integers.map(str))


@pytest.mark.parametrize("command", sorted(COMMAND_LINES))
def test_the_command_line_runs_or_names_the_option(command, tmp_path_factory, capsys):
    from gpuensembles import cli

    base = [command, *COMMAND_LINES[command].split(), "--seed", "1", "--backend", "cpu", "--no-progress"]
    values = [i for i, token in enumerate(base) if i > 0 and not token.startswith("--") and base[i - 1] != command]
    folder = tmp_path_factory.mktemp(command)

    @settings(max_examples=max(25, settings.default.max_examples // 4))  # a valid case writes a file: slower
    @given(index=st.sampled_from(values), token=hostile_token())
    def one(index, token):
        argv = base[:index] + [token] + base[index + 1:]
        option = next(base[i] for i in range(index, 0, -1) if base[i].startswith("--"))
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.chdir(folder)
            try:
                status = cli.main(argv + ["-o", str(folder / "out.nc"), "--overwrite"])
            except SystemExit as exit_info:
                TRIED[f"gpuensembles {command}"]["usage error"] += 1
                last = capsys.readouterr().err.strip().splitlines()[-1]
                assert exit_info.code == 2, f"{option} {token!r}: exit status {exit_info.code}"
                # a token that looks like an option ('-abc') is one for argparse: then it is the token that is named;
                # '--' ends the options: the arguments after it are missing, and those are named
                named = (_names(last, option) or (token.startswith("-") and f"unrecognized arguments: {token}" in last)
                         or (token == "--" and "the following arguments are required" in last))
                assert named, f"{option} {token!r}: the message does not name {option}: {last}"
                return
            except Exception as err:  # noqa: BLE001
                pytest.fail(f"gpuensembles {command} {option} {token!r} raised {type(err).__name__}: {err}")
        TRIED[f"gpuensembles {command}"]["returned"] += 1
        capsys.readouterr()
        assert status == 0

    one()


def test_every_subcommand_has_a_command_line_above():
    assert set(COMMAND_LINES) == {entry.command.name for entry in registered()}
