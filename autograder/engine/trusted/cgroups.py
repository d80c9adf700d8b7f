"""A kernel in cgroups of its own: its share of the CPU held by the operating system.

`Cgroups(tree, limits)` makes a cgroup for one kernel (named for this process: its PID
and start time, and a counter), sets its weight, quota and task limit, and moves every
process of `tree()` into it, looking again until none is outside (a process forked while
its parent moved may have stayed behind); what the kernel forks later is born in it. The
kernel (uid 1000 in its own namespaces, no /sys) cannot write to the cgroup file system,
so it cannot leave. The cgroup is removed once the tree has ended (a thread looks every
`FOLLOW` seconds; `close()` at once), or a little later where its processes are still
dying. Where the cgroups are made is found at run time (`places`):

- cgroup v2, where this process's cgroup (or the folder given, a delegated subtree) has
  the cpu controller: one cgroup, cpu.weight, cpu.max, pids.max (the controllers enabled
  in the parent's cgroup.subtree_control when they are not);
- cgroup v1, a writable `cpu` hierarchy (this process's cgroup in it): cpu.shares and the
  CFS quota; in the `pids` hierarchy too where it is mounted: pids.max.

`sweep(folder)` removes the empty cgroups of graders that have ended (the first cgroup a
process makes sweeps its folder first): cgroups of graders still running, on this machine
or beside this test run, are left alone. autograder.engine.trusted.cpushare chooses between this
and its throttle.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
import time
from pathlib import Path

PREFIX = "course-grade-"
WEIGHT_V1, WEIGHT_V2 = 1024, 100  # the default weight of a cgroup: every kernel the same
PERIOD_US = 100_000  # the CFS period of a quota
TASKS_PER_PROCESS = 16  # pids.max counts threads: TensorFlow starts dozens per process
FOLLOW = 0.2  # seconds between two looks at whether the kernel's tree has ended


class Unavailable(Exception):
    """No cgroup can be made for a kernel here."""


_PLACES: dict = {}  # where -> [(version, parent folder)]
_COUNTER = itertools.count()
_LEFT: set[Path] = set()  # cgroups whose processes were still dying when closed


def _me() -> str:
    """This process, as cgroup names carry it: its PID and start time (PIDs are reused)."""
    return f"{os.getpid()}-{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(file system, root, mount point, options) of each cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, kind = left.split(), right.split()
            if kind and kind[0] in ("cgroup", "cgroup2"):
                found.append((kind[0], fields[3], fields[4], set(kind[-1].split(","))))
    return found


def _own(controller: str | None) -> str | None:
    """This process's cgroup: in the v1 hierarchy of `controller`, or v2's (None)."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            number, names, path = line.rstrip("\n").split(":", 2)
            if (controller is None and number == "0") or controller in names.split(","):
                return path
    return None


def _folder(root: str, mount: str, path: str) -> Path:
    inside = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(mount) / ("" if inside == "." else inside)


def places(parent: Path | None) -> list[tuple[int, Path]]:
    """Where kernels' cgroups are made: [(2, folder)] or [(1, cpu folder), (1, pids
    folder)?]; Unavailable when nowhere."""
    if parent is not None:
        version = 2 if (parent / "cgroup.controllers").exists() else 1
        return [(version, parent)]
    mounts = _mounts()
    for kind, root, mount, _ in mounts:
        if kind == "cgroup2" and _own(None) is not None:
            folder = _folder(root, mount, _own(None))
            if "cpu" in _read(folder / "cgroup.controllers").split():
                return [(2, folder)]
    found = []
    for controller in ("cpu", "pids"):
        for kind, root, mount, options in mounts:
            if kind == "cgroup" and controller in options and _own(controller) is not None:
                found.append((1, _folder(root, mount, _own(controller))))
                break
    if not found or not (found[0][1] / "cpu.shares").exists():
        raise Unavailable("no cgroup file system with the cpu controller")
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> None:
    with open(path, "a") as handle:  # "a": cgroup files take a write at any offset
        handle.write(value)


class Cgroups:
    """The kernel in cgroups of its own (v2: one; v1: one in each of cpu and pids)."""

    def __init__(self, tree, limits, where: str = "cgroup", follow: bool = True):
        """`where`: "cgroup" (found at run time), or the folder to make them in; `follow`:
        closed by itself once `tree()` is empty (the kernel stopped)."""
        if where not in _PLACES:
            _PLACES[where] = places(Path(where) if where.startswith("/") else None)
            for _, folder in _PLACES[where]:
                sweep(folder)
        self.folders: list[Path] = []
        name = f"{PREFIX}{_me()}-{next(_COUNTER)}"
        try:
            for version, folder in _PLACES[where]:
                self.version = version
                if version == 2:
                    _enable(folder)
                self.folders.append(folder / name)
                os.mkdir(folder / name)
                self._configure(folder / name, version, limits)
        except OSError as error:
            self.close()
            raise Unavailable(f"cannot make a cgroup: {error}") from error
        self.how = f"cgroup v{self.version}"
        try:
            self.adopt(tree)
        except OSError as error:  # not allowed to move processes there (v2, not root)
            self.close()
            raise Unavailable(f"cannot move the kernel into its cgroup: {error}") from error
        if follow:
            threading.Thread(target=self._follow, args=(tree,), daemon=True).start()

    def _follow(self, tree) -> None:
        while self.folders and tree():
            time.sleep(FOLLOW)
        self.close()

    @staticmethod
    def _configure(folder: Path, version: int, limits) -> None:
        tasks = str(limits.max_processes * TASKS_PER_PROCESS)
        quota = int(limits.cpu_cores * PERIOD_US) if limits.cpu_cores else None
        if version == 2:
            _write(folder / "cpu.weight", str(WEIGHT_V2))
            _write(folder / "cpu.max", f"{quota or 'max'} {PERIOD_US}")
            if (folder / "pids.max").exists():
                _write(folder / "pids.max", tasks)
        elif (folder / "cpu.shares").exists():
            _write(folder / "cpu.shares", str(WEIGHT_V1))
            if quota:
                _write(folder / "cpu.cfs_period_us", str(PERIOD_US))
                _write(folder / "cpu.cfs_quota_us", str(quota))
        else:
            _write(folder / "pids.max", tasks)

    def adopt(self, tree, rounds: int = 50) -> None:
        """Every process of `tree()` into each cgroup, until a look finds none outside (a
        process forked while its parent moved may have stayed behind)."""
        for _ in range(rounds):
            outside = False
            for folder in self.folders:
                inside = set(_read(folder / "cgroup.procs").split())
                for pid in tree():
                    if str(pid) not in inside:
                        outside = True
                        try:
                            _write(folder / "cgroup.procs", str(pid))
                        except ProcessLookupError:
                            pass  # it ended
            if not outside:
                return

    def members(self) -> set[int]:
        return {int(p) for p in _read(self.folders[0] / "cgroup.procs").split()} \
            if self.folders else set()

    def close(self) -> None:
        """Remove the cgroups; those whose processes are still dying a little later."""
        left = [f for f in self.folders if not _remove(f)]
        self.folders = []
        if left:
            _LEFT.update(left)
            threading.Thread(target=_remove_later, args=(left,), daemon=True).start()


def _enable(folder: Path) -> None:
    """The cpu (and pids) controllers for the cgroups below `folder` (v2)."""
    wanted = {"cpu", "pids"} & set(_read(folder / "cgroup.controllers").split())
    missing = wanted - set(_read(folder / "cgroup.subtree_control").split())
    if missing:
        _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(missing)))


def _remove(folder: Path) -> bool:
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    _LEFT.discard(folder)
    return True


def _remove_later(folders, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while folders and time.monotonic() < deadline:
        time.sleep(0.1)
        folders = [f for f in folders if not _remove(f)]


def sweep(parent: Path) -> list[Path]:
    """Remove the empty cgroups under `parent` made by graders that have ended; the ones
    removed."""
    removed = []
    try:
        names = [e.name for e in os.scandir(parent) if e.name.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        if not owner_alive(name) and _remove(parent / name):
            removed.append(parent / name)
    return removed


def owner_alive(name: str) -> bool:
    """Whether the grader that made the cgroup `name` still runs (unknown names: yes)."""
    try:
        pid, started = name[len(PREFIX):].split("-")[:2]
        return _start_time(int(pid)) == started
    except ValueError:
        return True


@atexit.register
def _at_exit() -> None:
    _remove_later(list(_LEFT), seconds=5)
