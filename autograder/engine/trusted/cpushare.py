"""A kernel's share of the CPU: from the operating system where it can be, else held here.

`confine(tree, limits)` is called by autograder.engine.trusted.session once a kernel's top process
has started, before its first cell (`tree()`: the host PIDs of the kernel's processes, top
first). The share it returns ends by itself when that tree has ended (`close()` ends it at
once). In order:

- **cgroups** (autograder.engine.trusted.cgroups): the kernel's whole tree in a cgroup of its own,
  cgroup v2 or v1, whichever this machine lets the grader write, with the weight of any
  other cgroup. A kernel's weight is the same as any other kernel's however many processes
  or sessions it starts (a setsid per process defeats the scheduler's autogroups, not
  this): when kernels compete, each gets an equal part of the cores. `Limits.cpu_cores`
  (`--cpu-cores`) adds a hard cap (cpu.max, the CFS quota); it is off by default, since it
  would idle cores nobody else wants (the last submissions of a class, a learner's
  self-grading) and the wall-clock limits already bound a kernel's time. pids.max bounds a
  fork bomb between two looks of the session's watcher.
- **the throttle** (`Throttle`), where no cgroup can be had (not root and nothing
  delegated, or COURSE_GRADE_CPU_SHARE=throttle): the tree is niced (`NICE`: the grader's
  own processes come first), and a process it starts in a session of its own (setsid: a
  scheduler autogroup of its own, which is how a kernel escapes the per-session sharing
  of autogroups) runs at `APART`, the lowest priority, and so does its autogroup
  (/proc/PID/autogroup; unless root, Linux takes one such change a tenth of a second, the
  others at the next looks), so that dozens of them weigh less than one process at nice 0
  with autogroups on or off. A thread here also adds up the tree's CPU time every `TICK`
  seconds and SIGSTOPs the whole tree for as long as it took more than its share of the
  cores, then SIGCONTs it: `cpu_cores` held always; else `kernel_threads` (cores /
  workers) held only while no core was idle and two or more of its processes ran
  (so a kernel alone is not slowed, nor one process's TensorFlow threads: one process, one
  session, is what autogroups hold); with neither, or all the cores, nothing is held. It
  holds whatever the scheduler's settings (autogroup on or off), on average over a
  fraction of a second, not from moment to moment (a hog running between two holds takes
  the cores, and a kernel's neighbour waits); it cannot see a process that lives and dies
  between two looks and is reaped by no process of the tree (SIGCHLD ignored), and with
  autogroups off, one process's many busy threads are held only by `cpu_cores`.

COURSE_GRADE_CPU_SHARE: unset or `cgroup` (cgroups found at run time, else the throttle),
`throttle`, `none` (neither: the grader as it was before, for benchmarks), or a folder of a
cgroup file system under which the kernels' cgroups are made (a delegated v2 subtree).
"""

from __future__ import annotations

import os
import signal
import threading
import time

from autograder.engine.trusted.cgroups import Cgroups, Unavailable

SWITCH = "COURSE_GRADE_CPU_SHARE"
TICK = 0.1  # seconds between the throttle's looks at the tree's CPU time
BURST = 0.5  # seconds of its share a throttled tree may save up while idle
IDLE = 0.25  # cores idle on average over a look: no other process wanted what it took
NICE = 10  # a kernel's processes: the grader's come first
APART = 19  # a kernel's process in a session of its own, and that session's autogroup
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
    return Throttle(tree, limits.cpu_cores or limits.kernel_threads or os.cpu_count() or 1,
                    hard=limits.cpu_cores is not None)


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

def idle_seconds() -> float:
    """Seconds the machine's cores have been idle, all told (/proc/stat)."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
        return (int(fields[4]) + int(fields[5])) / HZ  # idle, iowait
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_seconds(pids) -> float:
    """CPU time of the processes `pids`, and of the children each has waited for."""
    return sum(total for _, total in _times(pids).values())


def _times(pids) -> dict[int, tuple[float, float]]:
    """pid -> (its own CPU seconds, with those of the children it has waited for)."""
    found = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                ticks = [int(v) for v in handle.read().rsplit(")", 1)[1].split()[11:15]]
        except (OSError, ValueError, IndexError):
            continue
        found[pid] = (sum(ticks[:2]) / HZ, sum(ticks) / HZ)  # utime stime, cutime cstime
    return found


class Throttle(Share):
    """The tree niced, and stopped whenever it has taken more than `cores` cores."""

    how = "throttle"

    def __init__(self, tree, cores: float, hard: bool = True):
        """`hard`: held to `cores` even when cores are idle (--cpu-cores); else only while
        the machine has none idle (its share when kernels compete, as a cgroup's weight)."""
        self.tree, self.cores, self.hard = tree, float(cores), hard
        self.held_s = 0.0  # seconds the tree was to be stopped, all told
        self._niced: set[int] = set()
        self._done = threading.Event()
        self._nice()
        if self.cores < (os.cpu_count() or 1):  # else no cap: nothing to hold
            threading.Thread(target=self._run, daemon=True).start()

    def _nice(self, pids=None) -> None:
        """Each process niced once; one in a session of its own (setsid: a scheduler
        autogroup of its own) at the lowest priority, its autogroup too."""
        pids = pids if pids is not None else self.tree()
        own = _session(pids[0]) if pids else None
        for pid in pids:
            if pid in self._niced:
                continue
            apart = _session(pid) not in (own, None)
            try:
                os.setpriority(os.PRIO_PROCESS, pid, max(
                    APART if apart else NICE, os.getpriority(os.PRIO_PROCESS, pid)))
                if apart:  # once a tenth of a second at most, unless root: again later
                    with open(f"/proc/{pid}/autogroup", "w") as handle:
                        handle.write(str(APART))
                self._niced.add(pid)
            except (FileNotFoundError, PermissionError):  # no autogroups; not ours
                self._niced.add(pid)
            except OSError:  # EAGAIN: the next look
                pass

    def _run(self) -> None:
        last, times, idle = time.monotonic(), _times(self.tree()), idle_seconds()
        credit = 0.0  # CPU seconds the tree may still take
        while not self._done.wait(TICK):
            pids = self.tree()
            if not pids:
                return
            self._nice(pids)
            now, seen, idle_now = time.monotonic(), _times(pids), idle_seconds()
            tick = now - last
            spent = sum(t for _, t in seen.values()) - sum(t for _, t in times.values())
            busy = sum(own > times.get(pid, (own, 0))[0] for pid, (own, _) in seen.items())
            credit = min(credit + self.cores * tick - max(0.0, spent), self.cores * BURST)
            if not self.hard and (idle_now - idle > IDLE * tick or busy < 2):
                credit = max(credit, 0.0)  # what no one else wanted, or one process's threads
            last, times, idle = now, seen, idle_now
            if credit < 0:
                self._hold(-credit / self.cores)
                last, times, credit = time.monotonic(), _times(self.tree()), 0.0

    def _hold(self, seconds: float) -> None:
        """The whole tree stopped for `seconds` (what it forks meanwhile too; a process
        that another one continued is stopped again at the next look)."""
        end, held = time.monotonic() + seconds, set()
        self.held_s += seconds
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

    def close(self) -> None:
        self._done.set()


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass
