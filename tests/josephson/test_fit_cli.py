"""``gpuensembles fit``: CSV/TSV in, the fitted junction (NetCDF, summary, PNG) out; bad files exit 2."""

import numpy as np
import pytest
import xarray as xr

from gpuensembles import cli
from gpuensembles.models.josephson import fulton_dunkleberger as fd
from gpuensembles.models.josephson import likelihood

V0, DAMPING, THETA, GAMMA_DOT = 200.0, 0.5, 2.0, 1e-6
ARGS = ["--units", "1", "--V0", str(V0), "--damping", str(DAMPING), "--sweep-rate", str(GAMMA_DOT)]


def draw(theta, count, stream):
    grid = np.linspace(0.3, 0.99999, 3000)
    curve = fd.make_curve(grid, np.exp(likelihood.thermal_log_rate(grid, V0=V0, damping=DAMPING, theta=theta)))
    return fd.draw(curve, GAMMA_DOT, seed=9, stream=stream, first=0, count=count, gamma_start=0.3, gamma_end=0.99999)


def test_samples_csv_gives_the_fit_of_the_api(tmp_path, capsys):
    samples = draw(THETA, 800, 0)
    path = tmp_path / "switching.csv"
    np.savetxt(path, samples, header="current", comments="")
    out = tmp_path / "fit.nc"
    assert cli.main(["fit", str(path), *ARGS, "-o", str(out), "--plot", str(tmp_path / "fit.png")]) == 0
    text = capsys.readouterr().out
    assert "T_esc" in text and "chi2" in text
    with xr.open_dataset(out) as ds:
        assert abs(float(ds.T_esc) - THETA) < 4 * float(ds.T_esc_stderr)
    assert (tmp_path / "fit.png").stat().st_size > 10_000


def test_counts_tsv_with_a_temperature_column_gives_a_temperature_dimension(tmp_path):
    edges = np.linspace(0.7, 0.95, 51)
    lines = []
    for k, theta in enumerate((1.5, 2.5)):
        counts = np.histogram(draw(theta, 1000, k), bins=edges)[0]
        lines += [f"{lo}\t{hi}\t{n}\t{theta}" for lo, hi, n in zip(edges[:-1], edges[1:], counts)]
    path = tmp_path / "hist.tsv"
    path.write_text("lower\tupper\tcount\ttemperature\n" + "\n".join(lines) + "\n")
    out = tmp_path / "fit.nc"
    assert cli.main(["fit", str(path), "--counts", *ARGS, "-o", str(out), "--plot", str(tmp_path / "t.png")]) == 0
    with xr.open_dataset(out) as ds:
        assert list(ds.temperature.values) == [1.5, 2.5]
        assert np.all(np.abs(ds.T_esc.values - ds.temperature.values) < 4 * ds.T_esc_stderr.values)


@pytest.mark.parametrize("content, extra, match", [
    ("current\n0.8\nabc\n", [], "line 3"),
    ("0.8 0.9\n0.85\n", [], "different numbers of columns"),
    ("0.8,0.9,5\n0.85,0.95,3\n", ["--counts"], "lower edge the previous line's upper edge"),
    ("0.8,0.85,5\n0.85,0.9,-3\n", ["--counts"], "counts must be non-negative"),
    ("\n".join(["1e-6"] * 30), [], "looks like amperes|units='A'|--units A"),
])
def test_bad_files_exit_2_naming_what_is_wrong(tmp_path, capsys, content, extra, match):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["fit", str(path), *extra, *ARGS, "-o", str(tmp_path / "x.nc")])
    assert exit_info.value.code == 2
    assert __import__("re").search(match, capsys.readouterr().err)
