"""nbgrader's `Validator`, answering pass or fail (the `nbgrader validate` command exits 0
even when tests fail, so the course never relies on its exit code)."""

from __future__ import annotations

import os
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder import course
from autograder.cells import read_notebook


def course_config(root: Path) -> Config:
    """The course's nbgrader configuration, loaded as nbgrader would load it."""
    loader = PyFileConfigLoader(course.CONFIG_NAME, path=str(root))
    return loader.load_config()


def validate(path: Path, root: Path, invert: bool = False) -> dict:
    """Run nbgrader's Validator on `path`.

    Returns its results: empty when all is well; `failed` (tests that fail), or with
    `invert=True`, `passed` (tests that pass on what should be a blank stub);
    `changed` when locked cells were edited.
    """
    from nbgrader.validator import Validator

    read_notebook(path)  # an unreadable file gets one clear sentence
    validator = Validator(config=course_config(root))
    validator.invert = invert
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return validator.validate(str(path))


def summary(results: dict) -> str:
    """The results as short text: one line per offending cell."""
    lines = []
    for key, cells in results.items():
        for cell in cells:
            head = cell["source"].splitlines()[0] if cell["source"] else "(empty cell)"
            error = cell.get("raw_error", "").strip().splitlines()
            lines.append(f"{key}: {head[:80]}" + (f" -> {error[-1][:200]}" if error else ""))
    return "\n".join(lines)
