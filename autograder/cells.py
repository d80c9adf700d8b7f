"""Reading course notebooks and their nbgrader cells, with clear errors on bad input."""

from __future__ import annotations

import ast
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.errors import CourseError

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
STUDENT_FORBIDDEN = SOLUTION_MARKERS + HIDDEN_MARKERS + ("BEGIN SOLUTION", "HIDDEN TESTS")


# CPython 3.11's ast module keeps one recursion counter per interpreter, not per thread: two
# threads that parse at once can fail with "SystemError: AST constructor recursion depth
# mismatch" (python/cpython#106905). The grader parses in threads (self-grades side by side),
# so every parse of the grader goes through this lock.
PARSE_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, one thread at a time (PARSE_LOCK)."""
    with PARSE_LOCK:
        return ast.parse(source)


def read_notebook(path: Path | str) -> nbformat.NotebookNode:
    """Read a notebook; an unreadable one raises CourseError with one clear sentence."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CourseError(f"{path} does not exist.") from None
    except UnicodeDecodeError:
        raise CourseError(f"{path} is not a notebook: it is not UTF-8 text.") from None
    if not text.strip():
        raise CourseError(f"{path} is empty, not a notebook: restore it with `git checkout`.")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise CourseError(
            f"{path} is not a valid notebook (JSON error at line {error.lineno}, column "
            f"{error.colno}: {error.msg}): restore it with `git checkout -- {path}` or "
            "re-save it from JupyterLab."
        ) from None
    if not isinstance(raw, dict) or "cells" not in raw:
        raise CourseError(f"{path} is JSON but not a notebook (it has no cells).")
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as error:
        raise CourseError(f"{path} is not a valid notebook: {error}") from None


def write_notebook(nb: nbformat.NotebookNode, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def nbgrader_meta(cell) -> dict:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def is_answer(cell) -> bool:
    """An autograded answer cell: solution, not graded."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and meta.get("solution", False) \
        and not meta.get("grade", False)


def is_test(cell) -> bool:
    """An autograder tests cell: graded, locked, code, not a solution."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and meta.get("grade", False) \
        and not meta.get("solution", False)


def is_manual(cell) -> bool:
    """A manually graded answer (solution and grade at once)."""
    meta = nbgrader_meta(cell)
    return meta.get("grade", False) and meta.get("solution", False)


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def place_of(nb: nbformat.NotebookNode, index: int) -> str:
    """Cell `index` named as a learner finds it in JupyterLab (which shows no cell
    numbers): an exercise's answer or test by its id, else the code cell's rank under the
    section heading above it."""
    cell = nb.cells[index]
    gid = grade_id(cell)
    if gid and is_answer(cell):
        return f"your answer {gid}"
    if gid and is_test(cell):
        return f"the test {gid}"
    heading, rank = "", 0
    for before in reversed(nb.cells[:index + 1]):
        if before.cell_type == "code":
            rank += 1
        elif before.cell_type == "markdown":
            titles = [line.lstrip("#").strip() for line in before.source.splitlines()
                      if line.startswith("#")]
            if titles:
                heading = titles[-1]
                break
    ordinal = {1: "first", 2: "second", 3: "third"}.get(rank, f"{rank}th")
    where = f'under "{heading}"' if heading else "at the top of the notebook"
    return f"the {ordinal} code cell {where}"


def strip_solution_markers(source: str) -> str:
    """The solution as a student would have typed it: the marker lines removed."""
    kept = [line for line in source.splitlines() if line.strip() not in SOLUTION_MARKERS]
    return "\n".join(kept)


def exercise_of(test_id: str, answer_ids: list[str]) -> str | None:
    """The answer grade id that a test grade id `test_<name>[_<aspect>]` belongs to."""
    best = None
    for name in answer_ids:
        if test_id == f"test_{name}" or test_id.startswith(f"test_{name}_"):
            if best is None or len(name) > len(best):
                best = name
    return best


@dataclass
class Exercise:
    """One graded exercise: its answer cell and the test cells that grade it."""

    name: str
    answer_source: str
    tests: dict[str, float] = field(default_factory=dict)  # test grade id -> points

    @property
    def points(self) -> float:
        return sum(self.tests.values())


def exercises(nb: nbformat.NotebookNode) -> dict[str, Exercise]:
    """The graded exercises of a notebook, in order, keyed by answer grade id."""
    found: dict[str, Exercise] = {}
    for cell in nb.cells:
        if is_answer(cell):
            found[grade_id(cell)] = Exercise(grade_id(cell), cell.source)
    for test, owner in test_owners(nb).items():
        if owner in found:
            found[owner].tests[test] = float(nbgrader_meta(_cell(nb, test)).get("points", 0))
    return found


def test_owners(nb: nbformat.NotebookNode) -> dict[str, str | None]:
    """Test grade id -> the answer grade id it grades: the one its name says
    (`test_<name>[_<aspect>]`), else, as in nbgrader's own courses, the nearest answer cell
    above it; None for a test above every answer cell."""
    answers = [grade_id(c) for c in nb.cells if is_answer(c)]
    owners, last = {}, None
    for cell in nb.cells:
        if is_answer(cell):
            last = grade_id(cell)
        elif is_test(cell):
            owners[grade_id(cell)] = exercise_of(grade_id(cell), answers) or last
    return owners


def _cell(nb: nbformat.NotebookNode, gid: str):
    return next(c for c in nb.cells if grade_id(c) == gid)


def notebook_points(nb: nbformat.NotebookNode) -> float:
    """Total points of a notebook: every graded cell, autograded and manual."""
    return sum(float(nbgrader_meta(c).get("points", 0)) for c in nb.cells
               if nbgrader_meta(c).get("grade", False))


def defined_names(source: str) -> set[str]:
    """Top-level functions and classes a cell defines (by a light parse of its source)."""
    return set(re.findall(r"^(?:def|class)\s+([A-Za-z_]\w*)", source, flags=re.MULTILINE))


def _code_trees(nb: nbformat.NotebookNode, keep) -> list[ast.Module]:
    """The parsed code cells of `nb` for which `keep(cell)` holds (those that do not
    parse left out)."""
    trees = []
    for cell in nb.cells:
        if cell.cell_type == "code" and keep(cell):
            try:
                trees.append(parse(cell.source))
            except SyntaxError:
                continue
    return trees


def release_imports(release: nbformat.NotebookNode) -> str:
    """The import statements of the release's ordinary code cells (the setup cell's)."""
    lines = []
    for tree in _code_trees(release, lambda cell: not nbgrader_meta(cell)):
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if not (module or "").startswith("autograder"):
                    lines.append(ast.unparse(node))
    return "\n".join(dict.fromkeys(lines))


def release_names(release: nbformat.NotebookNode) -> list[str]:
    """The names the release's own code cells (answers included, tests not) bind at the
    notebook's top level, less those its imports bind: the only names a test takes from
    the kernel. Taken from the release, the list tells the kernel nothing about any test."""
    imported = {alias.asname or alias.name.split(".")[0]  # read, not run: no TensorFlow here
                for node in parse(release_imports(release)).body
                for alias in node.names}
    found: set[str] = set()
    for tree in _code_trees(release, lambda cell: not is_test(cell)):
        _top_level_names(tree, found)
    return sorted(n for n in found if n not in imported and not n.startswith("_"))


def _top_level_names(node: ast.AST, found: set[str]) -> None:
    """The names `node` binds in the module's scope: not inside a function, class, lambda
    or comprehension of its own (their names are theirs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(child.name)
            for decorator in child.decorator_list:
                _top_level_names(decorator, found)
            continue
        if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                              ast.GeneratorExp)):
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            found.add(child.id)
        _top_level_names(child, found)
