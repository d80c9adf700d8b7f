"""Shared fixtures: where the course is, and its notebooks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
RELEASE = ROOT / "notebooks"
MUTANTS = ROOT / "tests" / "mutants"


def assignments() -> list[str]:
    from autograder import course

    return course.assignments(ROOT)


def solution_paths() -> list[Path]:
    return sorted(SOLUTIONS.glob("*/*.ipynb"))


def release_paths() -> list[Path]:
    return sorted(p for p in RELEASE.glob("*/*.ipynb") if ".ipynb_checkpoints" not in p.parts)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
