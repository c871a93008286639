"""Style and docstrings are checked with the tests, so the README's test command is all CI runs:
``ruff`` over the code, ``numpydoc`` validation of the package's public docstrings
(both configured in ``pyproject.toml``)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ruff_is_clean():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "gpuensembles", "tests", "benchmarks", "examples",
                           "docs"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_public_docstrings_pass_numpydoc_validation():
    files = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "gpuensembles").rglob("*.py"))
    proc = subprocess.run([sys.executable, "-m", "numpydoc", "lint", *files], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
