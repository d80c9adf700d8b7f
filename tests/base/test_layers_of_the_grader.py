"""The grader's packages follow a submission's flow and depend one way: a module imports
only modules of its own package or of the packages before it (function-level imports
included). The modules at the top of `autograder/` are the base every package uses, but
for the commands (`cli`, `__main__`), which use them all."""

from __future__ import annotations

import ast

from conftest import ROOT

GRADER = ROOT / "autograder"
# each layer may use the ones before it in this list, never the ones after it; two
# packages of one layer may not use each other
LAYERS = [
    ["base"],  # autograder/*.py: course, cells, limits, processes, late, errors, contract
    ["engine"],  # one submission graded
    ["scale"],  # many submissions' jobs: local processes, a Dask cluster
    ["grading"],  # intake, repair, results kept and reported; a class, a learner
    ["term"],  # the end of term: the LMS, similar answers
    ["hub", "authoring"],  # the class's JupyterHub; writing the course
    ["cli"],  # the commands
]
COMMANDS = {"cli", "__main__"}  # top-level modules of the "cli" layer, not of the base
RANK = {package: i for i, layer in enumerate(LAYERS) for package in layer}


def package_of(dotted: str) -> str:
    """The package of a module or name under `autograder`
    ("autograder.engine.sandboxed.kernel")."""
    parts = dotted.split(".")[1:]
    if not parts:
        return "base"
    if (GRADER / parts[0]).is_dir():
        return parts[0]
    return "cli" if parts[0] in COMMANDS else "base"


def module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path) -> list[tuple[str, int]]:
    """(dotted name under autograder, line) of every import in `path`, at any depth."""
    here = module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]  # the package a relative import starts from
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(here[:len(here) - node.level + 1] + ([module] if module
                                                                        else []))
            if module.split(".")[0] == "autograder":
                found += [(f"{module}.{a.name}", node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names
                      if a.name.split(".")[0] == "autograder"]
    return found


def modules():
    return sorted(p for p in GRADER.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_is_in_a_known_package():
    folders = sorted(p.name for p in GRADER.iterdir()
                     if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(p for p in RANK if p not in ("base", "cli")), \
        "put each new package of autograder/ in a layer of LAYERS"
    for path in modules():
        depth = len(path.relative_to(GRADER).parts)
        rooms = path.relative_to(GRADER).parts[0] == "engine"  # engine/<room>/<module>
        assert depth <= (3 if rooms else 2), \
            f"{path}: a package of autograder/ holds modules, not packages"
        assert (path.parent / "__init__.py").is_file(), path
    for folder in folders:
        init = GRADER / folder / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), \
            f"{init}: say which part of a submission's flow the package is"
    # the tests mirror the packages: tests/engine/ holds the tests of autograder/engine/
    tests = ROOT / "tests"
    for folder in folders:
        assert (tests / folder).is_dir(), f"tests/{folder}/: the tests of autograder/{folder}/"
    assert not sorted(tests.glob("test_*.py")), "a test goes in the folder of what it tests"


def test_imports_go_one_way():
    names = {rank: "/".join(layer) for rank, layer in enumerate(LAYERS)}
    wrong = []
    for path in modules():
        own = package_of(module_name(path))
        for name, line in imported(path):
            used = package_of(name)
            if used != own and RANK[used] >= RANK[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}, layer "
                             f"{names[RANK[own]]}) imports {name} ({used})")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_what_it_must():
    """The rule at work on names the grader uses: engine code may not import grading,
    the base may not import the engine, hub and authoring may not import each other."""
    assert package_of("autograder") == package_of("autograder.course.find_root") == "base"
    assert package_of("autograder.cli") == package_of("autograder.__main__") == "cli"
    assert package_of("autograder.engine.sandboxed.kernel") == "engine"
    assert RANK["base"] < RANK["engine"] < RANK["scale"] < RANK["grading"] < RANK["term"]
    assert RANK["hub"] == RANK["authoring"] < RANK["cli"]
    submission = GRADER / "engine" / "trusted" / "submission.py"
    assert ("autograder.engine.trusted.executor.FINDINGS" in
            [name for name, _ in imported(submission)])  # a top-level import
    assert ("autograder.engine.trusted.executor.facts_of" in
            [name for name, _ in imported(submission)])  # one inside a function


def test_the_sandboxed_room_imports_nothing_of_the_grader():
    """What runs beside the student's code (engine/sandboxed/) is trusted with nothing, so
    it imports nothing of the grader's side: only itself, the wire and the base."""
    wrong = []
    for path in sorted((GRADER / "engine" / "sandboxed").glob("*.py")):
        for name, line in imported(path):
            allowed = (name.startswith(("autograder.engine.sandboxed", "autograder.engine.wire"))
                       or package_of(name) == "base")
            if not allowed:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


LINE_LIMIT = 350  # lines of one module of the grader: past it, a module holds two things


def test_a_reader_finds_every_module_on_the_maps_and_none_is_long():
    """Each module of a package is named in its package's docstring and in the README's map
    of the code, each top-level module in the map; no module passes LINE_LIMIT lines."""
    import re

    readme = (ROOT / "README.md").read_text()
    start = readme.index("\nautograder/ ")
    code_map = readme[start:readme.index("\ndata/ ", start)]
    unnamed, long = [], []
    for path in modules():
        if path.stem.startswith("__"):
            continue
        word = re.compile(rf"\b{path.stem}\b")
        where = path.relative_to(ROOT)
        if not word.search(code_map):
            unnamed.append(f"{where}: not in the README's map of the code")
        if path.parent != GRADER:
            init = ast.get_docstring(ast.parse((path.parent / "__init__.py").read_text()))
            if not word.search(init or ""):
                unnamed.append(f"{where}: not in its package's docstring")
        lines = len(path.read_text().splitlines())
        if lines > LINE_LIMIT:
            long.append(f"{where}: {lines} lines")
    assert not unnamed, "\n".join(unnamed)
    assert not long, f"split these by concern (over {LINE_LIMIT} lines): {long}"
