"""Kernel side of class grading: the tests run with the real check helpers.

A student's code runs in the same Python as the tests, so a notebook can replace what the
tests rely on: `checks.check_close = lambda *a, **k: None`, `np.testing.assert_allclose`,
`builtins.AssertionError`, or rebind `checks` itself. The grader puts a cell calling
`snapshot()` before the notebook's first cell and one calling `restore(...)` before every
test cell; `restore` puts back every attribute of the guarded modules, every builtin and
every name the notebook's imports bind, and prints what it had to put back, which the
grader reports to the student. These cells are removed from the graded notebook.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import sys

MARKER = "# course-grade guard: not part of the submission"
REPORT_PREFIX = "course-grade-restored "
GUARDED_MODULES = ("builtins", "numpy", "numpy.testing", "numpy.testing._private.utils",
                   "sparse_embeddings.checks", "sparse_embeddings.tf1")
# IPython puts these into builtins while a cell runs, a fresh object each time.
# ipykernel swaps `input` (and `raw_input`, `getpass`) for each request.
_VOLATILE_BUILTINS = {"get_ipython", "exit", "quit", "display", "_", "__", "___", "input",
                      "raw_input", "getpass"}

_pristine: dict[str, dict] = {}


def snapshot() -> None:
    """Remember the guarded modules' attributes, before any student code has run."""
    # The notebook's imports cell quiets TensorFlow before importing it; do the same, since
    # importing the check helpers imports TensorFlow first.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in GUARDED_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        _pristine[name] = dict(vars(module))


def restore(namespace: dict, before: str, imports: str = "") -> list[str]:
    """Put back what the student replaced; print and return what that was."""
    restored = []
    for name, saved in _pristine.items():
        module = sys.modules.get(name)
        if module is None:
            continue
        current = vars(module)
        for key, value in saved.items():
            if name == "builtins" and key in _VOLATILE_BUILTINS:
                continue
            if current.get(key, _pristine) is not value:
                setattr(module, key, value)
                restored.append(f"{name}.{key}")
    if imports:
        fresh: dict = {}
        exec(imports, fresh)  # the notebook's own import statements; modules are cached
        for key, value in fresh.items():
            if key != "__builtins__" and namespace.get(key, _pristine) is not value:
                namespace[key] = value
                restored.append(key)
    if restored:
        builtins.print(REPORT_PREFIX + json.dumps({"before": before, "names": restored}))
    return restored


def snapshot_source() -> str:
    return f"{MARKER}\nimport autograder.sandbox\nautograder.sandbox.snapshot()"


def restore_source(before: str, imports: str) -> str:
    return (f"{MARKER}\n__import__('autograder.sandbox').sandbox.restore("
            f"globals(), {before!r}, {imports!r})")
