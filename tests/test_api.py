"""The public API: every exported name, accessor and subcommand, reachable as before the
package was laid out by model family."""

import importlib

import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles import cli

PUBLIC = ["escape_times", "switching_currents", "escape_rates", "retrapping_currents", "josephson", "langevin",
          "kuramoto", "ising", "mc_solve", "mcls", "xorsat", "cluster", "open_dataset", "__version__"]


def test_all_lists_the_public_names_and_each_exists():
    assert sorted(ge.__all__) == sorted(PUBLIC)
    for name in ge.__all__:
        assert getattr(ge, name) is not None


@pytest.mark.parametrize("name", ["escape_times", "switching_currents", "escape_rates", "retrapping_currents",
                                  "langevin", "kuramoto", "ising", "mc_solve"])
def test_run_functions_are_functions(name):
    assert callable(getattr(ge, name))


@pytest.mark.parametrize("path, names", [
    ("josephson", ["escape_times", "switching_currents", "escape_rates", "normalize", "theory"]),
    ("mcls", ["mc_solve", "problems", "spectral_radius", "METHODS", "ESTIMATORS"]),
    ("xorsat", ["random_instance", "random_instances", "select_instance", "check_instance", "nullity", "satisfiable",
                "energy", "save_instance", "load_instance", "solve", "independent_sets"]),
])
def test_family_namespaces_keep_their_names(path, names):
    module = getattr(ge, path)
    for name in names:
        assert hasattr(module, name), f"ge.{path}.{name}"
    assert importlib.import_module(f"gpuensembles.{path}") is module


@pytest.mark.parametrize("accessor", ["fpt", "ising", "langevin", "tts"])
def test_dataset_accessors_are_registered(accessor):
    assert hasattr(xr.Dataset, accessor)


def test_cli_subcommands_are_the_same():
    choices = cli.build_parser()._subparsers._group_actions[0].choices
    assert set(choices) == {"escape-times", "switching-currents", "escape-rates", "retrapping-currents", "mc-solve",
                            "langevin", "kuramoto", "ising", "xorsat", "fit"}
