"""nbgrader's `Validator`, answering pass or fail (the `nbgrader validate` command exits 0
even when tests fail, so the course never relies on its exit code)."""

from __future__ import annotations

import os
import re
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


def message_of(error: str) -> str:
    """The exception's name and whole message at the end of a cell's error as the Validator
    reports it (an IPython traceback: its last part, after a blank line, from the line
    that names the exception), without terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", error or "").strip()
    blocks = text.split("\n\n")
    for start in range(len(blocks) - 1, -1, -1):
        if re.match(r"^[A-Za-z_][\w.]*: |^[A-Za-z_][\w.]*$", blocks[start]):
            return "\n\n".join(blocks[start:]).strip()
    return blocks[-1].strip() if blocks else ""


def summary(results: dict) -> str:
    """The results as text: per offending cell its first line, then the error's message
    whole (the kernel wrapped it to fit a terminal), indented."""
    lines = []
    for key, cells in results.items():
        for cell in cells:
            head = cell["source"].splitlines()[0] if cell["source"] else "(empty cell)"
            if lines:
                lines.append("")
            lines.append(f"{key}: {head[:80]}")
            message = message_of(cell.get("raw_error", ""))
            lines.extend(f"    {line}" for line in message.splitlines())
    return "\n".join(lines)
