"""The documentation builds with warnings as errors, running every example at its CPU size."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpuensembles as ge

ROOT = Path(__file__).parent.parent


@pytest.mark.slow
def test_docs_build_and_examples_run(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path), MPLBACKEND="Agg")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"),
         str(ROOT / "docs"), str(tmp_path / "html")],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for page in ("index", "getting_started", "josephson", "switching_rates", "phase_diffusion", "switching_fits",
                 "validation", "scaling", "performance", "development_log", "mcls", "langevin", "ising", "xorsat",
                 "api", "contributing"):
        assert (tmp_path / "html" / f"{page}.html").exists()
    # the gallery ran the examples: their figures and their NetCDF outputs exist
    for name, variable in (("arrhenius", "escape_time"), ("switching_li2007", "switching_current"),
                           ("switching_rates_li2007", "cdf"), ("phase_diffusion", "run_probability"),
                           ("switching_fit", "T_esc"),
                           ("mcls_laplacian", "x"), ("langevin_fig2", "density"), ("kuramoto_fig4", "r"),
                           ("ising_thesis", "bin_e"), ("xorsat_tts", "tts_sweeps")):
        assert (tmp_path / "html" / "_images" / f"sphx_glr_{name}_001.png").stat().st_size > 10_000
        assert variable in ge.open_dataset(tmp_path / f"{name}.nc")
    # the fits over temperature: T_esc follows the bath above the crossover and saturates below it
    fits = ge.open_dataset(tmp_path / "switching_fit.nc")
    t_esc, error, bath = fits.T_esc.values, fits.T_esc_stderr.values, fits.temperature.values
    assert t_esc[0] > 2 * bath[0] and np.all(np.abs(t_esc[-3:] - bath[-3:]) < 4 * error[-3:])
    # the Li junction at 1, 200 and 1e4 /s from one rate curve (the rates method with the real
    # escape_rates, on the CPU): ordered means, adiabatic sweeps, rates that were simulated
    li = ge.open_dataset(tmp_path / "switching_rates_li2007.nc")
    assert li.switching_current_A.dims == ("sweep_rate", "realization") and li.switched.all()
    assert np.all(np.diff(li.switching_current.mean("realization").values) > 0)
    assert float(li.adiabaticity.max()) < 0.01
    assert int(li.rate_steps.sum()) > 0 and li.attrs["backend"] == "cpu"
    # the Li junction under the voltage criterion: it switches above the retrapping current, where
    # the escape criterion's distribution lies below it (the phase diffusion page's first panel)
    voltage = ge.open_dataset(tmp_path / "phase_diffusion.nc")
    assert voltage.attrs["criterion"] == "voltage" and voltage.switched.all()
    assert float(voltage.switching_current.min()) > 0.353


def test_performance_page_stays_a_users_page():
    # the current figures and how to reproduce them; the dated record lives in development_log.rst
    assert len((ROOT / "docs" / "performance.rst").read_text().splitlines()) < 250
