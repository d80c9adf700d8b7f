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
    from support import SKIP_ENV, find_chromium

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


# --- tiers: a test over SLOW_LIMIT seconds carries the slow marker ------------------------

SLOW_LIMIT = 10.0  # seconds, set-up and call, on a machine as fast as the reference below
TIERS = ("slow", "browser")
# The same test takes twice as long on a machine half as fast: the limit grows with the
# time a fixed loop takes here (best of three) against its time on the reference machine
# (2 cores, AMD EPYC at 2.0 GHz, the slowest the suite has run on: 0.176 s in the whole
# run of 2026-12-06, suite.json's loop_s). COURSE_SLOW_LIMIT sets the limit, unscaled.
REFERENCE_LOOP_S = 0.18


def _loop_seconds() -> float:
    import time

    best = float("inf")
    for _ in range(3):
        started, total = time.perf_counter(), 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return best


def pytest_configure(config):
    config._course_loop_s = _loop_seconds()
    config._course_slow_limit = float(os.environ["COURSE_SLOW_LIMIT"]) if \
        os.environ.get("COURSE_SLOW_LIMIT") else \
        SLOW_LIMIT * max(1.0, config._course_loop_s / REFERENCE_LOOP_S)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup":
        item._course_setup_s = call.duration
    if report.when != "call" or not report.passed or \
            any(item.get_closest_marker(tier) for tier in TIERS):
        return
    spent = call.duration + getattr(item, "_course_setup_s", 0.0)
    limit = item.config._course_slow_limit
    if spent > limit:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} took {spent:.1f} s without the slow marker "
                           f"(the limit is {limit:.3g} s on this machine): mark it "
                           "@pytest.mark.slow, so that `make check` stays a fast tier")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After `make check` (the fast tier): how many tests it left out, and when the whole
    suite last passed, on which commit."""
    if os.environ.get("COURSE_TIER") != "check":
        return
    left_out = len(terminalreporter.stats.get("deselected", []))
    write = terminalreporter.write_line
    write(f"make check left out {left_out} slow and browser tests; `make test` runs them all.")
    write(_last_whole_run())


def _last_whole_run() -> str:
    import json

    record = ROOT / "benchmarks" / "results" / "suite.json"
    if not record.exists():
        return "The whole suite has not run on this machine yet (`make test`)."
    run = json.loads(record.read_text())
    outcome = "passed" if run.get("exit_status") == 0 else \
        f"failed ({run.get('failed', 0)} failed, {run.get('error', 0)} errors)"
    where = run.get("commit", "an unrecorded commit")
    here = _commit()
    if here and where.startswith(here):
        place = "on this tree" if not run.get("changes") and not _changes() else \
            "on this commit (with uncommitted changes then or now)"
    else:
        place = f"on commit {where[:12]}, not this one ({here[:12] or 'unknown'})"
    return (f"The whole suite last ran {place}, on {run.get('finished', '?')}, and "
            f"{outcome} in {run.get('seconds', 0) / 60:.0f} min.")


def _git(*args: str) -> str:
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _commit() -> str:
    return _git("rev-parse", "HEAD")


def _changes() -> bool:
    return bool(_git("status", "--porcelain", "--untracked-files=no"))


# --- the suite's own size and time, for benchmarks/figures.py ---------------------------

def pytest_sessionstart(session):
    import time

    session.config._suite_started = time.monotonic()


def pytest_sessionfinish(session, exitstatus):
    """A run of the whole suite (the README's `make test`: no test named, selected or
    deselected) records how many tests ran, how they ended and how long it took in
    `benchmarks/results/suite.json`, which `benchmarks/figures.py` quotes."""
    import time

    option = session.config.option
    whole = (not session.config.args or session.config.args == ["tests"]) \
        and not getattr(option, "keyword", "") and not getattr(option, "markexpr", "") \
        and not getattr(option, "deselect", None) and not getattr(option, "maxfail", 0) \
        and not getattr(option, "lf", False) and not getattr(option, "collectonly", False)
    started = getattr(session.config, "_suite_started", None)
    if not whole or started is None or session.testscollected == 0:
        return
    try:
        _record_suite(session, exitstatus, time.monotonic() - started)
    except Exception as error:  # a record that cannot be written never fails the suite
        print(f"\nbenchmarks/results/suite.json not written: {error!r}")


def _record_suite(session, exitstatus, seconds: float) -> None:
    import datetime
    import json

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter else {}
    counts = {kind: len([r for r in stats.get(kind, []) if getattr(r, "when", "call")
                         in ("call", "setup")]) for kind in ("passed", "failed", "error",
                                                              "skipped")}
    # seconds per test file (set-up, call and tear-down), keyed by its path under tests/:
    # "grading/test_hostile.py"
    files: dict[str, float] = {}
    for reports in stats.values():
        for report in reports:
            if hasattr(report, "nodeid") and isinstance(getattr(report, "duration", None),
                                                         float):
                name = report.nodeid.split("::")[0].removeprefix("tests/")
                files[name] = files.get(name, 0.0) + report.duration
    out = ROOT / "benchmarks" / "results" / "suite.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "make test", "tests": session.testscollected, **counts,
        "exit_status": int(exitstatus), "seconds": seconds,
        "cores": os.cpu_count(),
        # this machine's speed: the slow limit's loop, in seconds (tests/conftest.py)
        "loop_s": round(getattr(session.config, "_course_loop_s", 0.0), 3),
        "finished": datetime.date.today().isoformat(),
        "commit": _commit(), "changes": _changes(),
        "files": dict(sorted(files.items(), key=lambda kv: -kv[1]))}, indent=1))
