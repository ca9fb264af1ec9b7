"""The library's layers (docs/ARCHITECTURE.md, "Layers"): every import of ``src/fedclust`` -
module level or inside a function - goes to the same or a lower layer, and no two modules of
different packages import each other in a loop. Read from the source with ``ast``; nothing is
imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "fedclust"

#: package or top-level module -> layer (an import may go to the same or a lower layer)
LAYERS = {
    "errors": 0, "seeds": 0, "io": 0, "torch_optim": 0, "config": 0, "stats": 0,
    "federation": 1, "metrics": 1, "report": 1,
    "privacy": 1,  # the centre-side send, release log, recorder, attacks: used by the stages
    "privacy.suite": 5,  # the attack suite runs every stage's protocol
    # the deployment registry's engine (stages register into it; MODULES names them only as
    # strings, imported on demand, as fedclust.sections does for the report)
    "deployment": 1,
    "deploycheck": 3,  # the smallest deployed stage (column means), to try a set-up
    "data": 2,
    "hac": 3, "dec": 3, "decentral": 3, "admm": 3, "survival": 3, "bayes": 3,
    "attacks": 4,  # attacks HAC's projections and perturbations
    "fedcref": 4,  # refines DEC's models
    "perf": 4,  # times the hac methods
    "generative": 4,  # on survival's cohort and C-index
    "boosting": 4,  # on the admm and decentral data loaders
    # DP on the dec, hac, survival, decentral (heart), admm and boosting methods: above boosting
    "privacy_utility": 5,
    "flower": 5, "transports": 5, "sections": 5, "cli": 5, "config_doc": 5,
    "deployrun": 5,  # the workflow's deployment rule: a stage's centres on fedclust.flower
}  # fmt: skip
#: stage packages: one imports another only across layers (attacks -> hac, fedcref -> dec)
STAGES = {
    "hac",
    "attacks",
    "dec",
    "decentral",
    "admm",
    "survival",
    "fedcref",
    "bayes",
    "generative",
    "boosting",
    "privacy_utility",
}
#: (importer, imported) edges that break a rule today, each with what removes it
KNOWN = {
    ("config", "data"): "config.check_references reads data.workflow.DATASETS (a constant) and "
    "runs data.workflow.check_config (split sizes, issue 30 item 12)",
    # issue 30 A / item 12: validate_config runs each stage's config-time checks (its
    # workflow module: parse-time, no heavy imports). Removed by moving the stage checks out of
    # validate_config into a top-layer module that the Snakefile and the CLI call.
    ("config", "admm"): "config.check_stages runs admm.workflow.check_config",
    ("config", "dec"): "config.check_references runs dec.tuning_spec.check_reuse",
    ("config", "fedcref"): "config.check_stages runs fedcref.workflow.check_config",
    ("config", "hac"): "config.check_references runs hac.workflow.check_config",
    ("config", "survival"): "config.check_references runs survival.workflow.check_config",
    ("config", "privacy_utility"): "config.check_stages runs privacy_utility.workflow.check_config",
}
#: import cycles that exist today (the modules of one strongly connected component), each with
#: what removes it; any other cycle fails
KNOWN_CYCLES = {
    frozenset(
        {
            "fedclust.config",
            "fedclust.data.split",
            "fedclust.data.workflow",
            "fedclust.privacy_utility.workflow",
            "fedclust.survival.workflow",
        }
    ): "config.validate_config runs the stages' config-time checks (the KNOWN config -> stage "
    "edges), whose modules use config's helpers (data_mirror, check_name, defaults_at); removed "
    "with those edges",
}


def _unit(module: str) -> str:
    """``fedclust.dec.pipeline`` -> ``dec`` (the layer's key; ``privacy.suite`` where a module
    has a layer of its own)."""
    parts = module.split(".")
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in LAYERS:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else parts[0]


def _imports(path: Path) -> set[str]:
    """Every ``fedclust`` module ``path`` imports (relative imports resolved), at any depth."""
    rel = path.relative_to(SRC.parent).with_suffix("")
    pkg = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = set()
    tree = ast.parse(path.read_text())
    # a script entry point (`if __name__ == "__main__":`) runs only as `python -m`, never on
    # import: its imports make no import-time edge or cycle
    main_guard = {
        id(n)
        for top in tree.body
        if isinstance(top, ast.If) and "__main__" in ast.unparse(top.test)
        for n in ast.walk(top)
    }
    for node in ast.walk(tree):
        if id(node) in main_guard:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("fedclust.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                names = [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
                out |= set(names)
            elif node.module and node.module.startswith("fedclust."):
                out.add(node.module)
            elif node.module == "fedclust":
                out |= {f"fedclust.{a.name}" for a in node.names}
    return out


def _edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "__init__.py" and path.parent == SRC:
            continue
        src = _unit("fedclust." + ".".join(path.relative_to(SRC).with_suffix("").parts))
        for mod in _imports(path):
            dst = _unit(mod)
            if dst != src and dst in LAYERS:
                edges.setdefault((src, dst), []).append(str(path.relative_to(SRC)))
    return edges


def test_every_package_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    units = {u for u in units if not u.startswith(("_", ".")) and u not in {"schema"}}
    assert units <= set(LAYERS), f"give these a layer in LAYERS: {sorted(units - set(LAYERS))}"


def test_no_import_from_a_lower_layer_to_a_higher_one():
    edges = _edges()
    bad = {
        e: files
        for e, files in edges.items()
        if LAYERS[e[0]] < LAYERS[e[1]]
        or (e[0] in STAGES and e[1] in STAGES and LAYERS[e[0]] == LAYERS[e[1]])
        if e not in KNOWN
    }
    assert not bad, "imports against the layers: " + "; ".join(
        f"{a} -> {b} ({', '.join(sorted(set(f)))})" for (a, b), f in sorted(bad.items())
    )


@pytest.mark.parametrize("edge", sorted(KNOWN))
def test_known_exceptions_are_still_needed(edge):
    assert edge in _edges(), f"{edge} no longer occurs: remove it from KNOWN ({KNOWN[edge]})"


@pytest.mark.parametrize("engine", ["report", "deployment"])
def test_an_engine_names_no_stage(engine):
    assert not [e for e in _edges() if e[0] == engine and LAYERS[e[1]] >= LAYERS["data"]]


def _module_graph() -> dict[str, set[str]]:
    """module -> the fedclust modules it imports (a package's ``__init__`` is the package)."""
    known = {
        "fedclust." + ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        for p in SRC.rglob("*.py")
    }
    graph = {}
    for path in SRC.rglob("*.py"):
        name = "fedclust." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        graph[name] = {m for m in _imports(path) if m in known and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    """Function-level imports count: a lazy import does not break a cycle, it hides it."""
    cycles = [c for c in _cycles(_module_graph()) if frozenset(c) not in KNOWN_CYCLES]
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("cycle", sorted(KNOWN_CYCLES, key=sorted))
def test_known_cycles_are_still_there(cycle):
    assert sorted(cycle) in _cycles(_module_graph()), (
        f"{sorted(cycle)} is no longer a cycle: remove it from KNOWN_CYCLES ({KNOWN_CYCLES[cycle]})"
    )
