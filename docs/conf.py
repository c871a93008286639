"""Sphinx configuration: API from numpydoc docstrings, accessors, and a gallery executed from examples/."""

import os
import sys

import sphinx_autosummary_accessors

sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.abspath("."))
os.environ.setdefault("MPLBACKEND", "Agg")

from _gallery import OutputArgv  # noqa: E402

import gpuensembles  # noqa: E402
from gpuensembles.core.registry import autosummary_rst  # noqa: E402

# the run functions of the API page come from the registry (api.rst includes this file)
with open(os.path.join(os.path.dirname(__file__), "api_run_functions.rst"), "w") as _out:
    _out.write(autosummary_rst())

project = "gpuensembles"
author = "gpuensembles developers"
release = version = gpuensembles.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_autosummary_accessors",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates", sphinx_autosummary_accessors.templates_path]
exclude_patterns = ["_build", "api_run_functions.rst", "gallery/*.ipynb", "gallery/*.py.md5", "gallery/*.codeobj.json"]
# the API page includes the registry's list, which autosummary must scan as well
autosummary_generate = ["api.rst", "api_run_functions.rst"]
autodoc_typehints = "none"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
default_role = "code"
html_theme = "alabaster"
html_theme_options = {"description": "Very large stochastic ensembles on GPUs, as labeled xarray Datasets"}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "gallery",
    # every example, executed at its CPU size
    "filename_pattern": r"/(arrhenius|switching_li2007|switching_rates_li2007|phase_diffusion|switching_fit"
                        r"|mcls_laplacian|langevin_fig2|kuramoto_fig4|ising_thesis|xorsat_tts)\.py$",
    "reset_argv": OutputArgv(),
    "download_all_examples": False,
    "remove_config_comments": True,
    "run_stale_examples": True,  # every build runs the examples (the docs build is a test)
}
