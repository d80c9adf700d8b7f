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


# --- a real browser: Debian's chromium driven by Playwright (test_browser, test_hub) ------

HOW_TO_SKIP = ("skip the browser tests with COURSE_SKIP_BROWSER=1 or "
               "make test PYTEST_ARGS=\"-m 'not browser'\"")


@pytest.fixture(scope="session")
def chromium() -> str:
    from browser_support import SKIP_ENV, find_chromium

    if os.environ.get(SKIP_ENV):
        pytest.skip(f"{SKIP_ENV} is set: the browser tests are skipped")
    path = find_chromium()
    if path is None:
        pytest.fail("The browser tests need Debian's chromium, which is not installed: "
                    f"run `apt-get install chromium` (as root), or {HOW_TO_SKIP}.",
                    pytrace=False)
    return path


@pytest.fixture(scope="session")
def browser(chromium):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: `.venv/bin/pip install -e \".[dev]\"` (or "
                    f"{HOW_TO_SKIP}).", pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        yield browser
        browser.close()
