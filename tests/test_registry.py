"""Every registered run function: exported, on the command line, documented, and well behaved.

One test over all of them: the same numbers for any chunking, lazy with ``chunks=``,
provenance attributes present. Adding a model means registering it once; these tests
then cover it without a line more.
"""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import gpuensembles as ge
from gpuensembles import cli
from gpuensembles.core.registry import analyses, autosummary_rst, registered

ENTRIES = {entry.name: entry for entry in registered()}
PROVENANCE = ("gpuensembles_version", "model", "seed", "rng", "backend", "device", "history")
DOCS = Path(__file__).parent.parent / "docs"


def test_every_family_registers_its_run_functions():
    assert set(ENTRIES) == {"escape_times", "switching_currents", "escape_rates", "retrapping_currents", "langevin",
                            "kuramoto", "ising", "mc_solve", "xorsat.solve"}
    assert {e.family for e in ENTRIES.values()} == {"josephson", "langevin", "kuramoto", "ising", "xorsat", "mcls"}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_registered_function_is_public(name):
    entry = ENTRIES[name]
    owner, _, attr = name.rpartition(".")
    assert getattr(getattr(ge, owner) if owner else ge, attr) is entry.function


def test_cli_has_one_subcommand_per_registered_function():
    parser = cli.build_parser()
    choices = parser._subparsers._group_actions[0].choices
    assert set(choices) == {e.command.name for e in ENTRIES.values()} | {c.name for c, _ in analyses()}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_run_function_and_subcommand_takes_a_store(name):
    import inspect

    assert "store" in inspect.signature(ENTRIES[name].function).parameters
    parser = cli.build_parser()
    sub = parser._subparsers._group_actions[0].choices[ENTRIES[name].command.name]
    assert "--store" in sub._option_string_actions


def test_api_docs_list_every_registered_function():
    assert ".. include:: api_run_functions.rst" in (DOCS / "api.rst").read_text()
    assert "autosummary_rst()" in (DOCS / "conf.py").read_text()
    listed = [line.strip() for line in autosummary_rst().splitlines() if line.startswith("   gpuensembles.")]
    assert listed == [f"gpuensembles.{name}" for name in ENTRIES]


def _data(ds):
    return {k: v for k, v in ds.data_vars.items()}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_same_numbers_for_any_chunking_lazy_with_provenance(name):
    entry = ENTRIES[name]
    eager = entry.function(**entry.example(), backend="cpu", progress=False)
    assert all(isinstance(v.data, np.ndarray) for v in eager.data_vars.values())
    for key in PROVENANCE:
        assert key in eager.attrs, key
    assert int(eager.attrs["seed"]) == entry.example()["seed"]
    assert eager.attrs["backend"] == "cpu"
    assert name.rpartition(".")[2] in eager.attrs["history"]

    lazy = entry.function(**entry.example(), chunks=entry.example_chunks, backend="cpu", progress=False)
    chunked = [k for k, v in lazy.data_vars.items() if not isinstance(v.data, np.ndarray)]
    assert chunked, "chunks= must give a dask-backed result"
    one_task = entry.function(**entry.example(), chunks=10**9, backend="cpu", progress=False)
    assert len(lazy.__dask_graph__()) > len(one_task.__dask_graph__()), \
        "the example's chunks must split the work into several tasks"
    computed = lazy.compute()
    drop = [k for k in eager.data_vars if "seconds" in k]  # wall-clock measurements differ run to run
    xr.testing.assert_identical(eager.drop_vars(drop).drop_attrs(), computed.drop_vars(drop).drop_attrs())


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_variable_and_coordinate_has_units_and_a_long_name_through_netcdf(name, tmp_path):
    entry = ENTRIES[name]
    ds = entry.function(**entry.example(), backend="cpu", progress=False)
    path = tmp_path / "out.nc"
    ds.to_netcdf(path)
    back = ge.open_dataset(path)
    for which, result in (("result", ds), ("its NetCDF", back)):
        for var_name, var in list(result.data_vars.items()) + list(result.coords.items()):
            for attr in ("units", "long_name"):
                assert attr in var.attrs, f"{name}: {var_name} of {which} has no {attr}"
            if var.attrs["units"] == "1" and "time" in var.attrs["long_name"].split():
                assert "time_unit" in var.attrs, f"{name}: the time {var_name} does not say its unit"
