"""The layout is a contract: ``lint-imports`` passes on the package and fails on a planted violation;
only :mod:`gpuensembles.core.backend` imports ``numba.cuda``."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "gpuensembles"
# import-linter comes with the test extra; its console script sits beside this interpreter
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    return subprocess.run([LINT_IMPORTS, "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=300)


def test_import_contract_holds():
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("core/engine.py", "from ..models.ising import run as _planted", "Layers"),
    ("analysis/statistics.py", "from ..models.josephson import theory as _planted", "Layers"),
    ("models/ising/run.py", "from ..langevin import analysis as _planted", "independent"),
    ("core/templates/walks.py", "from .. import engine as _planted", "templates"),
])
def test_a_planted_violation_breaks_the_contract(tmp_path, module, line, contract):
    copy = tmp_path / "gpuensembles"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text() + f"\n{line}  # planted\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0, proc.stdout[-3000:]
    broken = [text for text in proc.stdout.splitlines() if text.endswith("BROKEN")]
    assert any(contract in text for text in broken), proc.stdout[-3000:]


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_only_the_backend_module_imports_numba_cuda():
    importers = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                       if any(name == "numba.cuda" or name.startswith("numba.cuda.") for name in _imports(path)))
    assert importers == ["core/backend.py"]
