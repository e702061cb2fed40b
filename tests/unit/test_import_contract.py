"""The package layout's promise: stages import only downwards (contracts in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_contract_names_every_stage_package() -> None:
    """A new top-level package must be placed in the layers, or the contract silently ignores it."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = {
        name.strip()
        for contract in config["contracts"]
        for layer in contract.get("layers", [])
        for name in layer.split("|")  # "a | b": independent siblings on one layer
    }
    bottom = {name for contract in config["contracts"] for name in contract.get("source_modules", [])}
    packages = {f"spanscore.{p.name}" for p in (ROOT / "spanscore").iterdir() if (p / "__init__.py").is_file()}
    modules = {f"spanscore.{p.stem}" for p in (ROOT / "spanscore").glob("*.py") if p.stem != "__init__"}
    unplaced = sorted((packages | modules) - layered - bottom)
    assert not unplaced, f"place these in [tool.importlinter] in pyproject.toml: {unplaced}"
