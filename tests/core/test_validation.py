"""The shared checks: types, counts and their limits, real parameters, memory before allocation."""

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.core import engine, runs, validation

ESCAPE = dict(damping=0.05, gamma=0.5, D=0.01, h=0.004, realizations=4, seed=1, backend="cpu", progress=False)


@pytest.mark.parametrize("value, error, message", [
    ("10", TypeError, "n must be an integer >= 1, got str '10'"),
    (None, TypeError, "got NoneType None"),
    (True, TypeError, "got bool True"),
    ([3], TypeError, "got list"),
    (2.5, ValueError, "got 2.5"),
    (float("nan"), ValueError, "got nan"),
    (float("inf"), ValueError, "got inf"),
    (0, ValueError, "got 0"),
    (2**63, ValueError, r"n must be an integer in \[1, 2\*\*62\], got 2\*\*63"),
    (10**5000, ValueError, r"got about 2\*\*16609"),
], ids=lambda v: type(v).__name__ if not isinstance(v, (str, float, bool, type(None))) else None)
def test_check_count_refuses_with_the_type_or_the_range(value, error, message):
    with pytest.raises(error, match=message):
        validation.check_count("n", value, maximum=None if value == "10" or value is None else 2**62)


def test_check_count_takes_integers_and_integer_valued_floats():
    assert validation.check_count("n", 1e6) == 10**6
    assert validation.check_count("n", np.int64(7)) == 7
    assert validation.check_count("n", np.array(5)) == 5
    assert validation.check_count("n", 2**62, maximum=2**62) == 2**62


@pytest.mark.parametrize("value, error", [
    ("0.6", TypeError), (["0.4", "0.6"], TypeError), (True, TypeError), (None, TypeError), (1 + 2j, TypeError),
    (np.array([1.0, 2.0], dtype=object), None), (np.array([1.0, None]), TypeError), ([[1.0], [1.0, 2.0]], ValueError),
    ([10**400], ValueError), (np.array(["a"]), TypeError), (np.array([True]), TypeError),
])
def test_real_array_refuses_what_is_not_a_real_number(value, error):
    if error is None:
        np.testing.assert_array_equal(validation.real_array("x", value), [1.0, 2.0])
        return
    with pytest.raises(error, match="x must be"):
        validation.real_array("x", value)


def test_as_parameter_refuses_strings_that_numpy_would_convert():
    assert float(validation.as_parameter("gamma", 0.6)) == 0.6
    with pytest.raises(TypeError, match="gamma must be a real number"):
        validation.as_parameter("gamma", "0.6")
    with pytest.raises(TypeError, match="gamma must be a real number"):
        validation.as_parameter("gamma", xr.DataArray(["0.6"], dims="x"))


def test_format_bytes_takes_any_size():
    assert validation.format_bytes(5) == "5 B"
    assert validation.format_bytes(8 * 10**12) == "7.28 TiB"
    assert validation.format_bytes(2**2000) == "about 2**2000 B"


def test_check_memory_names_what_the_bytes_and_the_fix():
    validation.check_memory(2**20, "small", limit=2**30)  # fits: nothing happens
    with pytest.raises(ValueError, match=r"the result of n=9 needs about 2 GiB of memory, more than the 1 GiB "
                                         r"available: pass chunks="):
        validation.check_memory(2**31, "the result of n=9", limit=2**30)
    with validation.gathered("ask for less"), pytest.raises(ValueError, match="available: ask for less$"):
        validation.check_memory(2**31, "it", limit=2**30)
    assert validation.available_memory() > 0


@pytest.mark.parametrize("function", ["escape_times", "langevin"])
def test_a_result_that_cannot_fit_in_memory_is_refused_before_allocation(function, monkeypatch):
    # 10**12 realizations: 8 TB of int64 steps alone; numpy used to raise MemoryError (or worse)
    monkeypatch.setattr(engine, "_run_eager", lambda *a: pytest.fail("ran"))
    monkeypatch.setattr(runs, "_run_pieces", lambda *a: pytest.fail("ran"))
    if function == "escape_times":
        call = lambda: ge.escape_times(**{**ESCAPE, "realizations": 10**12})
    else:
        call = lambda: ge.langevin(h=0.01, steps=10, realizations=10**12, backend="cpu", progress=False)
    with pytest.raises(ValueError, match=r"realizations=1000000000000.* needs about [\d.]+ TiB of memory") as err:
        call()
    assert "chunks=" in str(err.value) and "cluster" in str(err.value)


def test_lazy_results_check_the_memory_of_one_chunk():
    with pytest.raises(ValueError, match="one chunk of .* needs about"):
        ge.escape_times(**{**ESCAPE, "realizations": 10**12, "chunks": 10**11})
    lazy = ge.escape_times(**{**ESCAPE, "realizations": 10**12, "chunks": 10**7})  # 1e5 tasks
    assert lazy.steps.shape == (10**12,)  # nothing allocated: the realization coordinate is a RangeIndex


def test_max_steps_beyond_int64_and_a_string_gamma_are_refused():
    with pytest.raises(ValueError, match=r"max_steps must be an integer in \[1, 2\*\*62\], got 10000000000000000000"):
        ge.escape_times(**{**ESCAPE, "max_steps": 10**19})
    with pytest.raises(TypeError, match=r"gamma must be a real number or an array of them, got str '0.6'"):
        ge.escape_times(**{**ESCAPE, "gamma": "0.6"})
