"""The backend module: choice of target, and the numpy compatibility step numba-cuda needs."""

import numpy as np
import pytest

from gpuensembles.core import backend


def test_numpy_without_row_stack_gets_the_alias_back(monkeypatch):
    # numba-cuda <= 0.30.4 registers an overload of np.row_stack when its target loads;
    # numpy >= 2.5 removed the alias, and every kernel then fails to compile.
    if hasattr(np, "row_stack"):
        monkeypatch.delattr(np, "row_stack")
    backend._patch_numpy_for_numba_cuda()
    assert np.row_stack is np.vstack  # noqa: NPY201  (the removed alias is what is tested)


def test_an_existing_row_stack_is_left_alone(monkeypatch):
    sentinel = object()
    monkeypatch.setattr(np, "row_stack", sentinel, raising=False)
    backend._patch_numpy_for_numba_cuda()
    assert np.row_stack is sentinel  # noqa: NPY201


@pytest.mark.parametrize("name", ["gpu", "", "CPU", None])
def test_unknown_backend_names_the_parameter(name):
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.resolve(name)


def test_cpu_needs_no_gpu():
    assert backend.resolve("cpu") == "cpu"
    assert "CPU" in backend.device_name("cpu")
