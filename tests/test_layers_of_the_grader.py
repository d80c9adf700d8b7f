"""The grader's modules depend one way, along a submission's flow: a module imports only
modules of its own layer or of the layers before it (function-level imports included)."""

from __future__ import annotations

import ast

from conftest import ROOT

# each layer may use the ones above it in this list, never the ones below
LAYERS = {
    "base": ["errors", "limits", "processes", "notebooks", "late", "course", "wire",
             "sandbox", "contract"],
    "engine": ["service", "kernel", "session", "remote", "trusted", "withheld", "executor",
               "engine", "runner"],
    "grading": ["intake", "repair", "store", "reports", "feedback", "grading", "selfgrade"],
    "scale": ["dask_cluster", "dask_local"],
    "class": ["classgrade", "lms", "similarity"],
    "authoring": ["release", "validation", "mutants", "demo", "hub_setup", "hub", "button", "cli",
                  "__main__", "__init__"],
}


def imported(path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder"):
            names = [a.name for a in node.names] if node.module == "autograder" else \
                [node.module.split(".")[1]]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names
                     if a.name.startswith("autograder.")]
        else:
            continue
        found += [(name, node.lineno) for name in names]
    return found


def test_every_module_has_a_layer():
    modules = {p.stem for p in (ROOT / "autograder").glob("*.py")}
    placed = [m for layer in LAYERS.values() for m in layer]
    assert sorted(modules - set(placed)) == [], "put each new module in a layer of LAYERS"
    assert len(placed) == len(set(placed))


def test_imports_go_one_way():
    rank = {m: i for i, layer in enumerate(LAYERS.values()) for m in layer}
    names = list(LAYERS)
    wrong = []
    for path in sorted((ROOT / "autograder").glob("*.py")):
        for name, line in imported(path):
            if name in rank and rank[name] > rank.get(path.stem, -1):
                wrong.append(f"autograder/{path.name}:{line} ({names[rank[path.stem]]}) "
                             f"imports {name} ({names[rank[name]]})")
    assert not wrong, "\n".join(wrong)
