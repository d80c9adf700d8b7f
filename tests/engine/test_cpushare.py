"""A kernel's share of the CPU (autograder.engine.trusted.cpushare,
autograder.engine.trusted.cgroups): its
whole tree in a cgroup of its own with the weight, quota and task limit asked for, gone
when the kernel stops; cgroup v2's files as the limits say; a sweep that removes only what
ended graders left; and, where no cgroup can be had, the throttle that holds a tree to its
share of the cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from autograder import processes
from autograder.engine.trusted import cgroups, cpushare, sandbox
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits

# a parent with two children now and a third once told (after the move)
FAMILY = ("import subprocess, sys\n"
          "kids = [subprocess.Popen(['sleep', '60']) for _ in range(2)]\n"
          "sys.stdin.readline()\nkids.append(subprocess.Popen(['sleep', '60']))\n"
          "sys.stdin.readline()")
BUSY = ("import subprocess, sys\n"
        "for _ in range(3):\n"
        "    subprocess.Popen([sys.executable, '-c', 'while True: pass'],"
        " start_new_session=True)\n"
        "while True: pass")


def _places():
    try:
        return cgroups.places(None)
    except cgroups.Unavailable as error:
        pytest.skip(f"no cgroup can be made here ({error}): the throttle's tests cover it")


def _started(code: str, children: int):
    """`code` running, once it has started `children` processes; it and its tree()."""
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)

    def tree():
        return [process.pid, *processes.descendants(process.pid)] \
            if process.poll() is None else []

    deadline = time.monotonic() + 10
    while len(tree()) < 1 + children and time.monotonic() < deadline:
        time.sleep(0.02)
    return process, tree


def _end(process) -> None:
    processes.end(processes.tree(process.pid))


def test_a_tree_lands_in_its_own_cgroup_with_its_limits_and_the_cgroup_goes_after():
    _places()
    process, tree = _started(FAMILY, 2)
    try:
        share = cgroups.Cgroups(tree, Limits(cpu_cores=1.5, max_processes=8))
        folders = list(share.folders)
        assert share.members() == set(tree()) and len(share.members()) == 3
        process.stdin.write("\n")  # a third child, forked after the move: born inside
        process.stdin.flush()
        deadline = time.monotonic() + 10
        while len(tree()) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert share.members() == set(tree()) and len(share.members()) == 4
        files = {p.name: p.read_text().split() for f in folders for p in f.iterdir()
                 if p.name in ("cpu.shares", "cpu.cfs_quota_us", "cpu.weight", "cpu.max",
                               "pids.max")}
        if share.version == 1:
            assert files["cpu.shares"] == ["1024"] and files["cpu.cfs_quota_us"] == ["150000"]
        else:
            assert files["cpu.weight"] == ["100"] and files["cpu.max"] == ["150000", "100000"]
        assert files.get("pids.max", ["128"]) == [str(8 * cgroups.TASKS_PER_PROCESS)]
    finally:
        _end(process)
    share.close()
    assert not any(f.exists() for f in folders), folders


def test_cgroup_v2_gets_weight_quota_and_task_limit_in_a_delegated_folder(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    share = cgroups.Cgroups(lambda: [4242], Limits(cpu_cores=2, max_processes=4),
                            str(tmp_path), follow=False)
    folder = share.folders[0]
    assert share.how == "cgroup v2" and folder.parent == tmp_path
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +pids"
    assert (folder / "cpu.weight").read_text() == "100"
    assert (folder / "cpu.max").read_text() == "200000 100000"
    assert (folder / "cgroup.procs").read_text() == "4242"
    unlimited = cgroups.Cgroups(lambda: [], Limits(), str(tmp_path), follow=False)
    assert (unlimited.folders[0] / "cpu.max").read_text() == "max 100000"
    assert unlimited.folders[0].name != folder.name


def test_a_sweep_removes_the_empty_cgroups_of_ended_graders_only():
    folder = _places()[0][1]
    ended = folder / f"{cgroups.PREFIX}999999999-1-0"  # no such process
    mine = folder / f"{cgroups.PREFIX}{cgroups._me()}-9999"
    other = folder / "someone-elses"
    for path in (ended, mine, other):
        path.mkdir()
    try:
        assert cgroups.sweep(folder) == [ended]
        assert mine.exists() and other.exists() and not ended.exists()
    finally:
        for path in (ended, mine, other):
            if path.exists():
                path.rmdir()


def test_the_throttle_holds_a_tree_to_its_share_and_nices_it():
    process, tree = _started(BUSY, 3)
    try:
        share = cpushare.Throttle(tree, 0.2)
        time.sleep(0.3)
        used, started = cpushare.cpu_seconds(tree()), time.monotonic()
        time.sleep(2)
        cores = (cpushare.cpu_seconds(tree()) - used) / (time.monotonic() - started)
        assert cores < 0.2 * 1.3 + 0.05, cores  # 4 busy processes would take every core
        assert share.held_s > 0  # it was stopped (however busy the machine)
        parent, *apart = tree()  # its children run in sessions of their own: lowest
        assert os.getpriority(os.PRIO_PROCESS, parent) == cpushare.NICE
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in apart} == {cpushare.APART}
        if os.path.exists(f"/proc/{apart[0]}/autogroup") and os.geteuid() == 0:
            assert all(f"nice {cpushare.APART}" in open(f"/proc/{pid}/autogroup").read()
                       for pid in apart)
        share.close()
        time.sleep(0.3)  # closed: the tree runs again, nothing is left stopped
        assert all(psutil.Process(pid).status() != psutil.STATUS_STOPPED for pid in tree())
    finally:
        _end(process)


def test_a_share_without_a_cap_is_held_only_while_no_core_is_idle(monkeypatch):
    process, tree = _started(BUSY, 3)
    try:
        clock = iter(range(0, 10**9, 10))  # ten more idle seconds at every look
        monkeypatch.setattr(cpushare, "idle_seconds", lambda: next(clock))
        share = cpushare.Throttle(tree, 0.05, hard=False)
        time.sleep(0.6)
        share.close()
        assert share.held_s == 0  # it took only what no one else wanted
        monkeypatch.setattr(cpushare, "idle_seconds", lambda: 0.0)  # no core idle
        share = cpushare.Throttle(tree, 0.05, hard=False)
        time.sleep(0.6)
        share.close()
        assert share.held_s > 0
    finally:
        _end(process)


def test_without_a_cgroup_a_kernel_is_throttled_and_none_leaves_it_alone(monkeypatch):
    def nowhere(parent):
        raise cgroups.Unavailable("none here")

    monkeypatch.setattr(cgroups, "_PLACES", {})
    monkeypatch.setattr(cgroups, "places", nowhere)
    monkeypatch.setattr(cpushare, "_NO_CGROUP", set())
    monkeypatch.delenv(cpushare.SWITCH, raising=False)
    share = cpushare.confine(lambda: [], Limits(kernel_threads=1))
    assert share.how == "throttle" and share.cores == 1 and not share.hard
    assert cpushare.confine(lambda: [], Limits(cpu_cores=2)).hard
    share.close()
    monkeypatch.setenv(cpushare.SWITCH, "none")
    assert cpushare.confine(lambda: [], Limits()).how == "none"


@pytest.mark.slow
def test_a_kernel_and_all_it_starts_share_its_cgroup_or_are_throttled(monkeypatch):
    if not sandbox.available()[0]:
        pytest.fail("the sandbox is not available: " + sandbox.available()[1])
    places = _places()
    session = KernelSession(Limits(cell_timeout=30, cpu_cores=1), use_sandbox=True)
    session.start()
    try:
        share = session.cpu_share
        assert share.how == f"cgroup v{places[0][0]}"
        run = session.run("import os, subprocess\nchild = subprocess.Popen(['sleep', '60'])\n"
                          "print(os.path.exists('/sys/fs/cgroup'))")
        assert run.status == "ok", run.outputs
        assert run.outputs[0]["text"] == "False\n"  # no way to its cgroup's files
        assert share.members() == set(session._pids()) and len(share.members()) >= 3
        folders = list(share.folders)
    finally:
        session.stop()
    deadline = time.monotonic() + 5  # the cgroup goes by itself once the tree has ended
    while any(f.exists() for f in folders) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(f.exists() for f in folders), folders
    # where no cgroup can be had: a busy kernel held to its core, and still answering
    monkeypatch.setenv(cpushare.SWITCH, "throttle")
    session = KernelSession(Limits(cell_timeout=30, cpu_cores=1), use_sandbox=True)
    session.start()
    try:
        assert session.cpu_share.how == "throttle"
        assert session.run(BUSY.rsplit("\n", 1)[0]).status == "ok"  # 3 busy, and back
        time.sleep(0.5)
        used, started = cpushare.cpu_seconds(session._pids()), time.monotonic()
        time.sleep(2)
        cores = (cpushare.cpu_seconds(session._pids()) - used) / (time.monotonic() - started)
        assert cores < 1.3, cores
        run = session.run("print(6 * 7)")
        assert run.status == "ok" and "42" in run.outputs[0]["text"]
    finally:
        session.stop()
