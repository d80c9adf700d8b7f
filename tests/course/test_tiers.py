"""The suite's tiers: a test that takes long carries the slow marker, or it fails; `make
check` says what it left out and when the whole suite last ran."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def _pytest(folder, *args, **env):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
         "-q", *args], cwd=folder, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests"), **env})


def test_a_long_test_without_the_slow_marker_fails(tmp_path):
    (tmp_path / "test_long.py").write_text(
        "import time\nimport pytest\n\n"
        "def test_unmarked():\n    time.sleep(0.6)\n\n"
        "@pytest.mark.slow\ndef test_marked():\n    time.sleep(0.6)\n\n"
        "def test_quick():\n    pass\n")
    done = _pytest(tmp_path, "test_long.py", COURSE_SLOW_LIMIT="0.3")
    assert done.returncode == 1, done.stdout
    assert "1 failed, 2 passed" in done.stdout
    assert "test_unmarked took" in done.stdout and "without the slow marker" in done.stdout


def test_the_fast_tier_says_what_it_left_out_and_when_the_suite_last_ran(tmp_path):
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\ndef test_fast():\n    pass\n\n"
        "@pytest.mark.slow\ndef test_slow():\n    pass\n")
    done = _pytest(tmp_path, "test_some.py", "-m", "not slow and not browser",
                   COURSE_TIER="check")
    assert done.returncode == 0, done.stdout
    assert "make check left out 1 slow and browser tests" in done.stdout
    assert "The whole suite" in done.stdout
