"""The course library as the grading sandbox sees it: without the notebook's answers.

The library keeps its own version of many exercises (later notebooks need them:
`sparse_embeddings.mirrors.MIRRORS`). While notebook N is graded, its kernel gets a copy of
the library in which every public name of a version of one of N's exercises is a stub
that raises `Withheld`, so that an answer cannot call it. The library's own code keeps
working: inside the copy, its uses of those names are renamed to private ones. A
name that the notebook's own (non-exercise) cells use is kept, so that the notebook runs.

What this does not stop: an answer that reads the private name in the copy, or copies
the library's source; that is the exercise copied, which no grader can tell from typed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import shutil
from pathlib import Path

from autograder import course

PRIVATE = "_course_impl_"


def _library() -> str:
    """The course's library (pyproject.toml: [tool.course-grade] library)."""
    return course.facts().library or ""


def mirrors() -> dict:
    """Exercise -> the library's versions of it ("module:name"), from the course's
    `mirrors` (empty for a course without them)."""
    spec = course.facts().mirrors
    if not spec:
        return {}
    module, _, name = spec.partition(":")
    return dict(getattr(importlib.import_module(module), name))


def withheld_names(exercises, kept=()) -> set[str]:
    """The library names to withhold while notebooks with these exercises are graded."""
    table = mirrors()
    names = set()
    for exercise in exercises:
        for spec in table.get(exercise, ()):
            names.add(spec.partition(":")[2])
    return names - set(kept)


def names_used(sources) -> set[str]:
    """Library names the given code (the notebook's own cells) uses: imported from the
    library, or read as an attribute of a library module it imported."""
    if not _library():
        return set()
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            continue
    modules, found = set(), set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_library()):
                for alias in node.names:
                    if node.module == _library():
                        modules.add(alias.asname or alias.name)
                    else:
                        found.add(alias.name)
            elif isinstance(node, ast.Import):
                modules |= {a.asname for a in node.names
                            if a.name.startswith(_library()) and a.asname}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in modules:
                found.add(node.attr)
    return found


class _Rename(ast.NodeTransformer):
    def __init__(self, names: set[str], modules: set[str]):
        self.names, self.modules, self.public = names, modules, set()

    def _new(self, name: str) -> str:
        return PRIVATE + name if name in self.names else name

    def visit_Name(self, node):
        node.id = self._new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._new(node.arg)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        if node.name in self.names:
            self.public.add(node.name)
            node.name = PRIVATE + node.name
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        if node.name in self.names:
            self.public.add(node.name)
            node.name = PRIVATE + node.name
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.modules and node.attr in self.names:
            node.attr = PRIVATE + node.attr
        return node

    def visit_ImportFrom(self, node):
        if (node.module or "").startswith(_library()) or node.level:
            for alias in node.names:
                if alias.name in self.names:
                    self.public.add(alias.asname or alias.name)
                    alias.name = PRIVATE + alias.name
                    alias.asname = PRIVATE + alias.asname if alias.asname else None
        return node


def _module_aliases(tree: ast.Module) -> set[str]:
    """Names under which a module imports the library's modules (`ner`, `cl`, ...)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "") == _library():
            found |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.asname for a in node.names
                      if a.name.startswith(_library()) and a.asname}
    return found


def _stub(name: str, notebook: str) -> str:
    message = (f"the course library's {name} is withheld while {notebook} is graded: it is "
               "one of this notebook's exercises, so write it yourself")
    return (f"\n\n{name} = __course_withheld({name!r}, {message!r})\n")


STUB_FACTORY = '''

class Withheld(RuntimeError):
    """A library version of an exercise, called while that exercise is graded."""


def __course_withheld(name, message):
    def withheld(*args, **kwargs):
        raise Withheld(message)

    withheld.__name__ = withheld.__qualname__ = name
    withheld.__course_withheld__ = True
    return withheld
'''


def library_copy(names: set[str], into: Path, notebook: str) -> Path:
    """A copy of the library under `into` with `names` withheld; its package folder.
    The same names give the same folder (made once)."""
    import importlib.util

    source = Path(importlib.util.find_spec(_library()).origin).resolve().parent
    digest = hashlib.sha256(("\0".join(sorted(names)) + notebook).encode()).hexdigest()[:16]
    target = into / f"library-{digest}" / _library()
    if target.exists():
        return target
    staging = into / f"library-{digest}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    package = staging / _library()
    shutil.copytree(source, package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        renamer = _Rename(set(names), _module_aliases(tree))
        tree = ast.fix_missing_locations(renamer.visit(tree))
        text = ast.unparse(tree)
        if renamer.public:
            text += STUB_FACTORY
            text += "".join(_stub(name, notebook) for name in sorted(renamer.public))
        path.write_text(text + "\n", encoding="utf-8")
    (into / f"library-{digest}").mkdir(parents=True, exist_ok=True)
    package.rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    return target
