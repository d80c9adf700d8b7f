"""The course's library as the grading sandbox sees it: only what the notebook's own cells
need, and no version of the notebook's exercises in it.

The library is one package or several (`[tool.course-grade] library`; this course: its
helpers, `embeddings_course`, and the library they are built on, `sparse_embeddings`).
It keeps its own version of many exercises, since later notebooks need them
(`embeddings_course.mirrors.MIRRORS`): `sparse_embeddings.sparse` holds 02's and 03's,
and its `LazyAdam` is built on 03's `lazy_adam_update`. While notebook N is graded, its
kernel gets a copy of every library package made here, and nothing else of them
(autograder.engine.trusted.sandbox shows each package's copy in its place, so the
packages' own folders, their `.pyc` caches included, are out of the kernel's sight):

- an allow-list of modules: each library package itself, the library modules N's own
  cells (neither answers nor tests) import, the course's observations module and
  preload, and every library module these import, anywhere in their code (a function's
  import too, from one package into another), followed to the end. A module outside it is
  not in the copy at all: importing it fails as for a module that does not exist;
- in those modules, each version of one of N's exercises is rewritten, by what the course
  says of it (`IN_A_GRADED_COPY` beside `MIRRORS`):
  - "answer": a version called as the exercise is (`sparse.deduplicate` for 02's
    `deduplicate`) becomes a function that calls the student's own answer, the kernel's
    `__main__` name of the exercise, looked up at each call. The library's code that needs
    the exercise's job (03's `LazyAdam`, on `lazy_adam_update`; 06's `tagging.fit`, on
    `train_step`) then does only what the student's function does; called from that
    function, it raises `Withheld` instead of going round in a circle;
  - "built on": a version that does the job only by calling an "answer" version
    (`LazyAdam`, `tagging.make_tagger`, `ner.normalize_sentence`) stays as it is;
  - any other version is a stub that raises `Withheld`.
  Its definition is gone from the copy's text, and no private copy of it is left: the
  copy's files are the rewritten source (`ast.unparse`), nothing else.

A test that lends the library's version of a callee while a caller's test runs
(`mirrors.known_good`) does not find it here: each function above is marked
`__course_withheld__`, and the kernel then calls the grader's version, by callback
(autograder.engine.sandboxed.service).

`tests/library/test_twins.py` tries every public function of each notebook's copy on
that notebook's exercises' inputs: none computes an answer.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import shutil
from pathlib import Path

from autograder import cells, course

ANSWER, BUILT_ON = "answer", "built on"


def _libraries() -> tuple[str, ...]:
    """The course's library packages (pyproject.toml: [tool.course-grade] library)."""
    return course.facts().library


def _mirrors_module():
    spec = course.facts().mirrors
    if not spec:
        return None, ""
    module, _, name = spec.partition(":")
    return importlib.import_module(module), name


def mirrors() -> dict:
    """Exercise -> the library's versions of it ("module:name"), from the course's
    `mirrors` (empty for a course without them)."""
    module, name = _mirrors_module()
    return dict(getattr(module, name)) if module is not None else {}


def modes() -> dict:
    """Version ("module:name") -> how a graded copy treats it (ANSWER, BUILT_ON; a version
    not listed is a stub): the course's `IN_A_GRADED_COPY` beside its mirrors."""
    module, _ = _mirrors_module()
    return dict(getattr(module, "IN_A_GRADED_COPY", {})) if module is not None else {}


def source_folder(package: str | None = None) -> Path:
    """A library package's own folder (found, not imported); default: the first."""
    package = package or _libraries()[0]
    return Path(importlib.util.find_spec(package).origin).resolve().parent


def _in_library(dotted: str) -> bool:
    return dotted.split(".")[0] in _libraries()


def _is_module(dotted: str) -> bool:
    if not _in_library(dotted):
        return False
    package, *parts = dotted.split(".")
    base = source_folder(package).joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def names_used(sources) -> set[str]:
    """What the given code (the notebook's own cells) takes from the library: the names
    it imports from it or reads as an attribute of a library module, and the library
    modules it imports (dotted: "embeddings_course.checks")."""
    libraries = _libraries()
    if not libraries:
        return set()
    trees = []
    for source in sources:
        try:
            trees.append(cells.parse(source))
        except SyntaxError:
            continue
    aliases, found = set(), set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in \
                    libraries:
                if node.module not in libraries:
                    found.add(node.module)
                for alias in node.names:
                    dotted = f"{node.module}.{alias.name}"
                    if _is_module(dotted):
                        found.add(dotted)
                        aliases.add(alias.asname or alias.name)
                    else:
                        found.add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in libraries:
                        found.add(alias.name)
                        if alias.asname:
                            aliases.add(alias.asname)
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in aliases:
                found.add(node.attr)
    return found - set(libraries)


def withheld_names(exercises, kept=()) -> set[str]:
    """The recipe of the copy the kernel gets while a notebook with these exercises is
    graded: the library modules its own cells import (the dotted names in `kept`, from
    `names_used`) and its exercises that the library has versions of."""
    table = mirrors()
    return ({name for name in kept if "." in name}
            | {exercise for exercise in exercises if exercise in table})


def _imports(module: str) -> set[str]:
    """The library modules (dotted, in any of the course's packages) that `module`
    ("embeddings_course.checks", "sparse_embeddings") imports, anywhere in its code."""
    path = _path(module)
    inside = module.split(".")
    package = inside if path.name == "__init__.py" else inside[:-1]
    found = set()
    for node in ast.walk(cells.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level - 1
                up = package[:len(package) - (node.level - 1)]
                base = ".".join(filter(None, [*up, node.module]))
            if not _in_library(base):
                continue
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if _in_library(a.name)}
    return {name for name in found if _is_module(name)}


def _path(module: str) -> Path:
    """The file of a library module ("sparse_embeddings.sparse"; a package: its
    `__init__.py`)."""
    package, *parts = module.split(".")
    base = source_folder(package).joinpath(*parts)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def modules_needed(roots) -> set[str]:
    """The allow-list: `roots` (dotted), every library package itself, the course's
    observations and preload modules, and every library module these import, followed to
    the end."""
    facts = course.facts()
    start = set(_libraries()) | set(roots)
    for extra in [facts.observations or "", *facts.preload]:
        if _is_module(extra):
            start.add(extra)
    needed, todo = set(), list(start)
    while todo:
        module = todo.pop()
        if module in needed:
            continue
        needed.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages
        todo += sorted(_imports(module) - needed)
    return needed


def _plan(exercises) -> dict[str, dict[str, tuple[str, str]]]:
    """module -> {name: (exercise, mode)} for the versions of `exercises`."""
    table, how = mirrors(), modes()
    plan: dict = {}
    for exercise in sorted(exercises):
        for spec in table.get(exercise, ()):
            module, _, name = spec.partition(":")
            plan.setdefault(module, {})[name] = (exercise, how.get(spec, ""))
    return plan


FACTORY = '''
class Withheld(RuntimeError):
    """A library version of an exercise, called while that exercise is graded."""


def __course_withheld(name, message):
    def withheld(*args, **kwargs):
        raise Withheld(message)

    withheld.__name__ = withheld.__qualname__ = name
    withheld.__course_withheld__ = True
    return withheld


def __course_answer(exercise, name, missing, circle):
    import sys
    import threading

    calling = threading.local()

    def answer(*args, **kwargs):
        own = getattr(sys.modules.get("__main__"), exercise, None)
        if own is None or own is answer or getattr(own, "__course_withheld__", False):
            raise Withheld(missing)
        if getattr(calling, "now", False):
            raise Withheld(circle)
        calling.now = True
        try:
            return own(*args, **kwargs)
        finally:
            calling.now = False

    answer.__name__ = answer.__qualname__ = name
    answer.__course_withheld__ = True
    return answer
'''


def _replacement(name: str, exercise: str, mode: str, notebook: str) -> ast.stmt:
    if mode == ANSWER:
        missing = (f"the course library's {name} calls your own {exercise} while {notebook} "
                   f"is graded (it is one of this notebook's exercises): define {exercise} "
                   "first")
        circle = (f"the course library's {name} calls your own {exercise} while {notebook} "
                  f"is graded, and your {exercise} called it: write {exercise} yourself")
        call = f"__course_answer({exercise!r}, {name!r}, {missing!r}, {circle!r})"
    else:
        message = (f"the course library's {name} is withheld while {notebook} is graded: it "
                   "is one of this notebook's exercises, so write it yourself")
        call = f"__course_withheld({name!r}, {message!r})"
    return cells.parse(f"{name} = {call}").body[0]


def rewrite(source: str, versions: dict[str, tuple[str, str]], notebook: str) -> str:
    """A module's source with `versions` ({name: (exercise, mode)}) rewritten."""
    tree = cells.parse(source)
    body, changed = [], False
    for node in tree.body:
        defined = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        exercise, mode = versions.get(node.name, ("", BUILT_ON)) if defined else ("", "")
        if defined and mode != BUILT_ON:
            body.append(_replacement(node.name, exercise, mode, notebook))
            changed = True
        else:
            body.append(node)
    if changed:  # the factory after the docstring and `from __future__` imports
        at = 0
        while at < len(body) and (
                (isinstance(body[at], ast.Expr) and isinstance(body[at].value, ast.Constant)
                 and at == 0)
                or (isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__")):
            at += 1
        body[at:at] = cells.parse(FACTORY).body
    tree.body = body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def library_copy(recipe: set[str], into: Path, notebook: str) -> Path:
    """The copy of the library that `recipe` (`withheld_names`) describes, under `into`:
    the folder that holds one folder per library package (what the kernel's `sys.path`
    finds them in). The same recipe, library and rules give the same folder (made once).
    A recipe that names no module (a caller that knows only the exercises) gets the
    modules that hold the exercises' versions."""
    exercises = {r for r in recipe if "." not in r}
    roots = {r for r in recipe if "." in r} or {
        spec.partition(":")[0] for e in exercises for spec in mirrors().get(e, ())}
    modules = sorted(modules_needed(roots))
    plan = _plan(exercises)
    digest = hashlib.sha256("\0".join(
        [*sorted(recipe), notebook, Path(__file__).read_text(encoding="utf-8"),
         repr(sorted(modes().items())), repr(sorted(mirrors().items())), *modules]
        + [_path(m).read_text(encoding="utf-8") for m in modules]).encode()).hexdigest()[:16]
    target = into / f"library-{digest}"
    if target.exists():
        return target
    staging = into / f"library-{digest}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    for module in modules:
        path, package = _path(module), module.split(".")[0]
        written = staging / package / path.relative_to(source_folder(package))
        written.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(rewrite(path.read_text(encoding="utf-8"), plan.get(module, {}),
                                   notebook), encoding="utf-8")
    try:
        staging.rename(target)
    except OSError:  # made meanwhile by another grading process: the same files
        if not target.is_dir():
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return target
