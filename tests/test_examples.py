"""The examples run at their CPU size and write NetCDF and a PNG."""

import importlib.util
from pathlib import Path

import pytest

import gpuensembles as ge

EXAMPLES = Path(__file__).parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("name, variable", [("arrhenius", "escape_time"), ("switching_li2007", "switching_current")])
def test_example_runs(name, variable, tmp_path, capsys):
    _load(name).main(["--output", str(tmp_path / name)])
    assert "slope" in capsys.readouterr().out or variable == "switching_current"
    ds = ge.open_dataset(tmp_path / f"{name}.nc")
    assert variable in ds
    png = (tmp_path / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
