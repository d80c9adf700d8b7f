"""Where the course lives and what it holds."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import CourseError
from autograder.late import Policy

CONFIG_NAME = "nbgrader_config.py"
SOURCE_DIR = "solutions"
RELEASE_DIR = "notebooks"
# Not copied into a course folder that nbgrader works in.
IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "logs", "*.pyc")


def find_root(start: Path | str | None = None) -> Path:
    """The course folder: the nearest parent of `start` (or of this package) with the config."""
    candidates = [Path(start or os.getcwd()).resolve(), Path(__file__).resolve().parent]
    for begin in candidates:
        for folder in (begin, *begin.parents):
            if (folder / CONFIG_NAME).is_file() and (folder / SOURCE_DIR).is_dir():
                return folder
    raise CourseError(
        f"No course folder found (one holding {CONFIG_NAME} and {SOURCE_DIR}/): "
        "run this from the course's checkout."
    )


@dataclass(frozen=True)
class Facts:
    """What the grading engine needs to know about the course it grades: the
    `[tool.course-grade]` table of the course's pyproject.toml, every key optional (a
    course without one is graded as plain nbgrader would, tests in the grader)."""

    # the packages the notebooks import (read-only in the sandbox, the graded exercises
    # withheld): `library = "pkg"` or `library = ["course_pkg", "library_pkg"]`
    library: tuple[str, ...] = ()
    mirrors: str | None = None  # "module:NAME": exercise -> the library's versions of it
    preload: tuple[str, ...] = ()  # modules each grading kernel loads before the first cell
    observations: str | None = None  # the module whose REGISTRY of observations tests use
    late: Policy | None = None  # the late policy ([tool.course-grade.late]; none: no penalty)
    seeds: str | None = None  # the module whose hidden_seeds(secret) the grader enters


FACT_KEYS = {"library", "mirrors", "preload", "observations", "seeds", "late"}


ROOT_VARIABLE = "COURSE_GRADE_ROOT"  # the course a grading process grades (engine workers)


def facts(root: Path | None = None) -> Facts:
    """The engine's facts of the course at `root` (default: the course this process
    grades, $COURSE_GRADE_ROOT, else `find_root()`); CourseError, in one sentence, for a
    table it cannot read."""
    return _facts(Path(root or os.environ.get(ROOT_VARIABLE) or find_root()).resolve())


@functools.cache
def _facts(root: Path) -> Facts:
    path = root / "pyproject.toml"
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get(
            "course-grade", {}) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise CourseError(f"{path} cannot be read ({error}).") from error
    unknown = sorted(set(table) - FACT_KEYS)
    preload = table.get("preload", [])
    library = table.get("library", [])
    library = [library] if isinstance(library, str) else library
    if unknown or not isinstance(preload, list) or not isinstance(library, list) or not all(
            isinstance(table.get(k, ""), str) for k in ("mirrors", "observations", "seeds")) \
            or not all(isinstance(name, str) and name for name in library):
        raise CourseError(f"{path}: [tool.course-grade] takes library (a package name, or a "
                          "list of them), mirrors, observations and seeds (module names), "
                          "preload (a list of module names) and late (the late policy's "
                          "table)"
                          + (f"; it has {', '.join(unknown)}" if unknown else "") + ".")
    policy = None
    if "late" in table:
        from autograder import late

        known = assignments(root) if (root / SOURCE_DIR).is_dir() else None
        policy = late.parse(table["late"], f"{path}: [tool.course-grade.late]", known)
    return Facts(tuple(library), table.get("mirrors"), tuple(map(str, preload)),
                 table.get("observations"), policy, table.get("seeds"))


def assignments(root: Path) -> list[str]:
    """Assignment names: the folders of `solutions/` that hold a notebook."""
    source = root / SOURCE_DIR
    return sorted(p.name for p in source.iterdir()
                  if p.is_dir() and any(p.glob("*.ipynb")) and not p.name.startswith("."))


def assignment_digest(root: Path, assignment: str) -> str:
    """A digest of `assignment`'s source notebooks and the course's config: what its
    generated release and its grades depend on."""
    digest = hashlib.sha256()
    for path in sorted((root / SOURCE_DIR / assignment).rglob("*.ipynb")):
        digest.update(path.read_bytes())
    digest.update((root / CONFIG_NAME).read_bytes())
    return digest.hexdigest()[:16]


def solution_notebooks(root: Path, assignment: str) -> list[Path]:
    folder = root / SOURCE_DIR / assignment
    if not folder.is_dir():
        known = ", ".join(assignments(root)) or "none"
        raise CourseError(f"There is no assignment {assignment!r} (known: {known}).")
    return sorted(folder.glob("*.ipynb"))


def make_course_dir(root: Path, target: Path, names: list[str]) -> Path:
    """A throw-away nbgrader course folder at `target` holding the sources of `names`.

    Its config loads the course's own `nbgrader_config.py`, then points nbgrader at
    `target` and a gradebook inside it, so nothing touches the checkout.
    """
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(root / SOURCE_DIR / name, target / SOURCE_DIR / name, ignore=IGNORED)
    write_config(root, target)
    return target


def write_config(root: Path, target: Path) -> None:
    """Point the course folder `target` at itself: its own root and gradebook."""
    config = (
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(root / CONFIG_NAME)!r})  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(target)!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(target / 'gradebook.db')!r}\n"
    )
    (target / CONFIG_NAME).write_text(config, encoding="utf-8")


def tool_env(extra: dict | None = None) -> dict:
    """The environment for nbgrader: this Python's scripts first on PATH (nbgrader calls
    `alembic` by name), and TensorFlow's start-up log kept short."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    return {**os.environ, "PATH": bin_dir + os.pathsep + path, "TF_CPP_MIN_LOG_LEVEL": "3",
            **(extra or {})}


def run_nbgrader(args: list[str], cwd: Path, timeout: float | None = None,
                 env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in `cwd`; a failure raises CourseError with its log tail."""
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env=tool_env(env))
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-25:])
        raise CourseError(f"`nbgrader {' '.join(args)}` failed in {cwd}:\n{tail}")
    return result
