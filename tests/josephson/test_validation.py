"""Bad input fails with a ValueError (a TypeError for a wrong type) naming the parameter, before any kernel runs."""

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles.core import backend as _backend
from gpuensembles.core import engine

GOOD = dict(damping=0.05, gamma=0.5, D=0.01, h=0.004, realizations=4, seed=1, backend="cpu")


@pytest.fixture(autouse=True)
def no_kernel(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a kernel was compiled or run before validation finished")

    monkeypatch.setattr(engine, "first_passage_runner", refuse)


BAD = [
    ("realizations", -1, "realizations"),
    ("realizations", 0, "realizations"),
    ("realizations", 2.5, "realizations"),
    ("max_steps", 0, "max_steps"),
    ("max_steps", 10**19, r"max_steps must be an integer in \[1, 2\*\*62\]"),
    ("max_steps", 2**62 + 1, "max_steps"),
    ("seed", -1, "seed"),
    ("seed", 2**32, "seed"),
    ("seed", 1.5, "seed"),
    ("D", np.nan, "D"),
    ("D", np.inf, "D"),
    ("D", -0.01, "D"),
    ("D", 0.0, "D"),
    ("D", [0.01, np.nan], "D"),
    ("D", [], "D"),
    ("D", [[0.01, 0.02]], "D"),
    ("D", [0.01, 0.01], "D"),
    ("h", 0.0, "h"),
    ("h", -0.004, "h"),
    ("h", 0.5, "h is too large"),
    ("gamma", 1.0, "gamma"),
    ("gamma", -0.1, "gamma"),
    ("gamma", [0.5, 1.5], "gamma"),
    ("damping", 0.0, "damping"),
    ("V0", -1.0, "V0"),
    ("backend", "gpu", "backend"),
    ("model", "quantum", "model"),
    ("dtype", "float16", "dtype"),
    ("integrator", "rk4", "integrator"),
    ("passage", "beyond", "passage"),
    ("chunks", 0, "chunks"),
    ("chunks", {"temperature": 3}, "chunks"),
    ("chunks", 2.5, "chunks"),
    ("store", "", "store"),
]

WRONG_TYPE = [
    ("realizations", True, "realizations"),
    ("realizations", "10", "realizations"),
    ("realizations", None, "realizations"),
    ("max_steps", "1e6", "max_steps"),
    ("gamma", "0.6", "gamma must be a real number"),
    ("gamma", ["0.4", "0.6"], "gamma must be a real number"),
    ("gamma", True, "gamma"),
    ("gamma", None, "gamma"),
    ("D", "hot", "D"),
    ("D", 0.01 + 0j, "D .*complex"),
    ("D", [0.01, None], "D"),
    ("D", {"a": 1}, "D"),
    ("seed", "1", "seed"),
    ("chunks", "big", "chunks"),
    ("store", 3.5, "store"),
]


@pytest.mark.parametrize("name, value, message", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_input_names_the_parameter(name, value, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # store="" would be the current directory
    with pytest.raises(ValueError, match=message):
        ge.escape_times(**{**GOOD, name: value})


@pytest.mark.parametrize("name, value, message", WRONG_TYPE, ids=[f"{n}={v!r}" for n, v, _ in WRONG_TYPE])
def test_wrong_type_is_a_type_error_naming_the_parameter(name, value, message):
    with pytest.raises(TypeError, match=message):
        ge.escape_times(**{**GOOD, name: value})


def test_progress_other_than_auto_true_false_is_refused():
    with pytest.raises(ValueError, match="progress must be one of"):
        ge.escape_times(**{**GOOD, "progress": "always"})


def test_overdamped_step_bound_uses_relaxation_rate():
    # h * V0 cos(phi0) / damping = 0.5 * 0.866 / 1 > 0.1
    with pytest.raises(ValueError, match="relaxation rate"):
        ge.escape_times(**{**GOOD, "model": "overdamped", "damping": 1.0, "h": 0.5})


def test_baoab_is_for_the_underdamped_model():
    with pytest.raises(ValueError, match="integrator='baoab'"):
        ge.escape_times(**{**GOOD, "model": "overdamped", "damping": 1.0, "integrator": "baoab"})


def test_conflicting_coordinates_on_a_shared_dimension():
    D = xr.DataArray([0.01, 0.02], dims="case", coords={"case": [1, 2]})
    gamma = xr.DataArray([0.4, 0.5], dims="case", coords={"case": [1, 3]})
    with pytest.raises(ValueError, match="sharing a dimension"):
        ge.escape_times(**{**GOOD, "D": D, "gamma": gamma})


def test_parameter_named_like_the_ensemble_dimension():
    with pytest.raises(ValueError, match="realization"):
        ge.escape_times(**{**GOOD, "D": xr.DataArray([0.01, 0.02], dims="realization")})


def test_cuda_backend_without_gpu(monkeypatch):
    monkeypatch.setattr(_backend, "cuda_available", lambda: False)
    with pytest.raises(ValueError, match="backend='cuda'"):
        _backend.resolve("cuda")
    assert _backend.resolve("auto") == "cpu"
