"""A kernel's share of the CPU: from the operating system where it can be, else held here.

`confine(tree, limits)` is called by autograder.engine.session once a kernel's top process
has started, before its first cell (`tree()`: the host PIDs of the kernel's processes, top
first). The share it returns ends by itself when that tree has ended (`close()` ends it at
once). In order:

- **cgroups** (autograder.engine.cgroups): the kernel's whole tree in a cgroup of its own,
  cgroup v2 or v1, whichever this machine lets the grader write, with the weight of any
  other cgroup. A kernel's weight is the same as any other kernel's however many processes
  or sessions it starts (a setsid per process defeats the scheduler's autogroups, not
  this): when kernels compete, each gets an equal part of the cores. `Limits.cpu_cores`
  (`--cpu-cores`) adds a hard cap (cpu.max, the CFS quota); it is off by default, since it
  would idle cores nobody else wants (the last submissions of a class, a learner's
  self-grading) and the wall-clock limits already bound a kernel's time. pids.max bounds a
  fork bomb between two looks of the session's watcher.
- **the throttle** (`Throttle`), where no cgroup can be had (not root and nothing
  delegated, or COURSE_GRADE_CPU_SHARE=throttle): the tree is niced (+`NICE`: the grader's
  own processes come first), and a thread here adds up the tree's CPU time every `TICK`
  seconds and SIGSTOPs the whole tree for as long as it took more than its share of the
  cores (`cpu_cores`, else `kernel_threads`: cores / workers; with neither, or all the
  cores, there is no cap to hold), then SIGCONTs it. It holds whatever the scheduler's
  settings (autogroup on or off); what it cannot see is a process that lives and dies
  between two looks and is reaped by no process of the tree (SIGCHLD ignored).

COURSE_GRADE_CPU_SHARE: unset or `cgroup` (cgroups found at run time, else the throttle),
`throttle`, `none` (neither: the grader as it was before, for benchmarks), or a folder of a
cgroup file system under which the kernels' cgroups are made (a delegated v2 subtree).
"""

from __future__ import annotations

import os
import signal
import threading
import time

from autograder.engine.cgroups import Cgroups, Unavailable

SWITCH = "COURSE_GRADE_CPU_SHARE"
TICK = 0.1  # seconds between the throttle's looks at the tree's CPU time
BURST = 0.5  # seconds of its share a throttled tree may save up while idle
NICE = 10
HZ = os.sysconf("SC_CLK_TCK")
_NO_CGROUP: set[str] = set()  # the modes that found no cgroup in this process


class Share:
    """A kernel's tree left as it is (COURSE_GRADE_CPU_SHARE=none)."""

    how = "none"

    def close(self) -> None:
        pass


def confine(tree, limits):
    """The kernel whose processes `tree()` lists, given its share of the CPU: a Share,
    cgroups.Cgroups or Throttle, each with `how` and `close()`."""
    mode = os.environ.get(SWITCH) or "cgroup"
    if mode == "none":
        return Share()
    tree = pinned(tree)
    if mode != "throttle" and mode not in _NO_CGROUP:
        try:
            return Cgroups(tree, limits, mode)
        except (Unavailable, OSError, ValueError):  # no /proc (macOS), a file system unseen
            _NO_CGROUP.add(mode)  # for this process: the throttle from now on
    return Throttle(tree, limits.cpu_cores or limits.kernel_threads or os.cpu_count() or 1)


def pinned(tree):
    """`tree`, as long as its top process is the one it has now; then [] for good (the
    kernel has stopped: its share ends, even if a new kernel takes its place in `tree`)."""
    first = tree()
    top = first[0] if first else None

    def pinned_tree() -> list[int]:
        pids = tree()
        return pids if pids and pids[0] == top else []

    return pinned_tree


# ---------------------------------------------------------------------------------------
# the throttle: where no cgroup can be had
# ---------------------------------------------------------------------------------------

def cpu_seconds(pids) -> float:
    """CPU time of the processes `pids`, and of the children each has waited for."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            continue
    return total / HZ


class Throttle(Share):
    """The tree niced, and stopped whenever it has taken more than `cores` cores."""

    how = "throttle"

    def __init__(self, tree, cores: float):
        self.tree, self.cores = tree, float(cores)
        self.held_s = 0.0  # seconds the tree was stopped, all told
        self._niced: set[int] = set()
        self._done = threading.Event()
        self._nice()
        if self.cores < (os.cpu_count() or 1):  # else no cap: nothing to hold
            threading.Thread(target=self._run, daemon=True).start()

    def _nice(self, pids=None) -> None:
        for pid in pids if pids is not None else self.tree():
            if pid not in self._niced:
                self._niced.add(pid)
                try:
                    os.setpriority(os.PRIO_PROCESS, pid,
                                   max(NICE, os.getpriority(os.PRIO_PROCESS, pid)))
                except OSError:
                    pass

    def _run(self) -> None:
        last, used = time.monotonic(), cpu_seconds(self.tree())
        credit = 0.0  # CPU seconds the tree may still take
        while not self._done.wait(TICK):
            pids = self.tree()
            if not pids:
                return
            self._nice(pids)
            now, total = time.monotonic(), cpu_seconds(pids)
            credit = min(credit + self.cores * (now - last) - max(0.0, total - used),
                         self.cores * BURST)
            last, used = now, total
            if credit < 0:
                self._hold(-credit / self.cores)
                last, used, credit = time.monotonic(), cpu_seconds(self.tree()), 0.0

    def _hold(self, seconds: float) -> None:
        """The whole tree stopped for `seconds` (what it forks meanwhile too; a process
        that another one continued is stopped again at the next look)."""
        end, held = time.monotonic() + seconds, set()
        try:
            while not self._done.is_set():
                for pid in self.tree():
                    held.add(pid)
                    _signal(pid, signal.SIGSTOP)
                if time.monotonic() >= end:
                    break
                self._done.wait(min(0.02, max(0.0, end - time.monotonic())))
        finally:
            for pid in held:
                _signal(pid, signal.SIGCONT)
            self.held_s += seconds

    def close(self) -> None:
        self._done.set()


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass
