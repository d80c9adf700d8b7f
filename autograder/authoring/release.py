"""Regenerate the student release `notebooks/` from `solutions/` with nbgrader.

nbgrader's `generate_assignment` runs in a throw-away course folder, so the
checkout gets no gradebook and a second run writes the same bytes.
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from pathlib import Path

from autograder import course
from autograder.cells import STUDENT_FORBIDDEN, read_notebook


def generate(root: Path, out_dir: Path, names: list[str] | None = None, log=print) -> list[str]:
    """Write the release of `names` (default: every assignment) under `out_dir/<name>/`."""
    names = names or course.assignments(root)
    for name in names:  # an unreadable source stops here with a clear sentence
        for path in course.solution_notebooks(root, name):
            read_notebook(path)
    with tempfile.TemporaryDirectory(prefix="course-release-") as tmp:
        work = course.make_course_dir(root, Path(tmp) / "course", names)
        for name in names:
            log(f"generating {course.RELEASE_DIR}/{name}")
            course.run_nbgrader(["generate_assignment", name, "--force"], cwd=work)
            target = out_dir / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(work / course.RELEASE_DIR / name, target)
    return names


def update_release(root: Path, log=print) -> list[str]:
    """Regenerate `notebooks/` in place; folders of assignments that are gone are removed."""
    out = root / course.RELEASE_DIR
    out.mkdir(exist_ok=True)
    names = generate(root, out, log=log)
    for stale in out.iterdir():
        if stale.is_dir() and stale.name not in names and not stale.name.startswith("."):
            log(f"removing {course.RELEASE_DIR}/{stale.name} (no such assignment)")
            shutil.rmtree(stale)
    return names


def differences(expected: Path, actual: Path) -> list[str]:
    """Relative paths that differ between two release trees (missing, extra or changed)."""
    found = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        found.extend(f"{prefix}{n} (only in the fresh release)" for n in cmp.left_only)
        found.extend(f"{prefix}{n} (not in a fresh release)" for n in cmp.right_only
                     if n not in (".ipynb_checkpoints", "logs", "__pycache__"))
        for name in cmp.common_files:
            if (Path(cmp.left) / name).read_bytes() != (Path(cmp.right) / name).read_bytes():
                found.append(f"{prefix}{name} (changed)")
        for name, sub in cmp.subdirs.items():
            if name not in (".ipynb_checkpoints", "logs", "__pycache__"):
                walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(expected, actual), "")
    return sorted(found)


def leaked_markers(release_dir: Path) -> list[str]:
    """`path: marker` for each instructor marker found in a student notebook."""
    found = []
    for path in sorted(release_dir.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = read_notebook(path)
        text = "\n".join(cell.source for cell in nb.cells)
        found.extend(f"{path}: {m}" for m in STUDENT_FORBIDDEN if m in text)
    return found
