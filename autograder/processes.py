"""How the grader's processes end: one way for kernels, the class hub and Dask.

`end(processes, grace)` sends SIGTERM, gives them `grace` seconds to exit, then SIGKILLs
what is left and reaps it (no grace: SIGKILL at once, for a kernel that is thrown away).
`tree(pid)` and `group(pid)` say which processes belong to a started one: everything
below it, or everything in the process group it leads (a server started in its own
session, and what it spawned); `resident_bytes` and `folder_bytes` measure what a
watched process uses.
"""

from __future__ import annotations

import os
import threading

import psutil

PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc/PID/task/TID/children: reads only the tree's
    own entries, not every process on the machine (a kernel's watcher looks often)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as handle:
                    children = [int(child) for child in handle.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            todo.extend(children)
    return found


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def tree(pid: int) -> list[psutil.Process]:
    """`pid` and every process below it, top first."""
    return [p for p in map(_process, [pid, *descendants(pid)]) if p is not None]


def group(pid: int) -> list[psutil.Process]:
    """The processes of the process group that `pid` leads, the leader first."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pid:
                members.append(process)
        except (OSError, psutil.Error):
            continue
    return sorted(members, key=lambda p: p.pid != pid)


def end(processes, grace: float = 0.0, background: bool = False) -> None:
    """End `processes` (psutil.Process): SIGTERM and up to `grace` s to exit, then SIGKILL;
    with no grace, SIGKILL at once. Reaped before returning, or, with `background`, while
    the caller goes on (they are already killed: only the reaping waits)."""
    processes = [p for p in processes if p is not None]
    for process in reversed(processes):  # the leaves first
        try:
            process.terminate() if grace > 0 else process.kill()
        except psutil.Error:
            pass

    def finish() -> None:
        _, alive = psutil.wait_procs(processes, timeout=grace or 5)
        for process in alive:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)

    if background:
        threading.Thread(target=finish, daemon=True).start()
    else:
        finish()


def resident_bytes(pid: int) -> int:
    """Resident memory of `pid` in bytes (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def folder_bytes(folder, most: int = 1000) -> int:
    """Bytes of the files in `folder` and the folders below it, looking at `most` entries
    at most (the runtime folder: a few sockets and files)."""
    total, todo, seen = 0, [folder], 0
    while todo and seen < most:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > most:
                        break
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        pass
        except OSError:
            pass
    return total
