"""autograder.processes: the one way the grader's processes end."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from autograder import processes

# a parent that ignores SIGTERM, with a child that sleeps
STUBBORN = ("import signal, subprocess, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "subprocess.Popen(['sleep', '60'])\n"
            "time.sleep(60)\n")


def _started() -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", STUBBORN], start_new_session=True)
    deadline = time.monotonic() + 10
    while not processes.descendants(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return process


def test_a_group_ends_whole_sigkill_after_the_grace():
    process = _started()
    members = processes.group(process.pid)
    assert [m.pid for m in members][0] == process.pid and len(members) == 2
    started = time.monotonic()
    processes.end(members, grace=0.5)
    assert time.monotonic() - started < 5
    assert process.wait(5) is not None
    assert not any(m.is_running() and m.status() != psutil.STATUS_ZOMBIE for m in members)


def test_a_tree_ends_at_once_without_grace_and_can_be_reaped_in_the_background():
    process = _started()
    tree = processes.tree(process.pid)
    assert len(tree) == 2 and tree[0].pid == process.pid
    processes.end(tree, background=True)
    assert process.wait(5) is not None  # reaped here or by the background thread
    deadline = time.monotonic() + 5
    while tree[1].is_running() and tree[1].status() != psutil.STATUS_ZOMBIE and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tree[1].is_running() or tree[1].status() == psutil.STATUS_ZOMBIE
