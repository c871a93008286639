"""Helpers for the Sphinx-Gallery configuration (importable, so Sphinx can pickle them)."""

import os
import tempfile
from pathlib import Path


class OutputArgv:
    """Examples write their NetCDF and PNG to a temporary folder, not into the source tree."""

    def __call__(self, gallery_conf, script_vars):
        return ["--output", os.path.join(tempfile.gettempdir(), Path(script_vars["src_file"]).stem)]

    def __repr__(self):
        return "OutputArgv()"
