"""One grading kernel, started in the sandbox and watched from outside.

`KernelSession` starts `sandboxed.kernel` (in bubblewrap, or plainly with `sandbox=False`),
talks to it over Unix sockets in a private runtime folder (the sandbox has no network), runs
one cell at a time (`cellrun`: the wall-clock limit, the output cap), and stops the kernel,
with everything it started, past the memory or process limit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psutil
from jupyter_client import BlockingKernelClient, KernelManager
from jupyter_client.connect import write_connection_file

from autograder import course, processes
from autograder.engine.sandboxed import forks
from autograder.engine.trusted import cellrun, cpushare, forkserver, messages, sandbox
from autograder.engine.trusted.cellrun import CellRun
from autograder.limits import Limits

# Read by TensorFlow (its thread pool for an op's own work) and OpenMP when they start.
THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS")
RUNTIME_PARENT = "/var/tmp"
RUNTIME_QUOTA = 4 * 2**20  # bytes the kernel may leave in its runtime folder (host side)
WATCH_INTERVAL = 0.05  # seconds between two looks at the kernel's memory and processes
READY_SECONDS = 120  # a kernel's start, TensorFlow's import included, on a slow busy machine
START_FAILED = "the grader could not start a kernel for this notebook"


class KernelStartError(RuntimeError):
    """No kernel could be started; the message says why, and what to do, in one sentence."""


class _Manager(KernelManager):
    wrapper: list = []
    python: str = sys.executable

    def format_kernel_cmd(self, extra_arguments=None):
        return [*self.wrapper, self.python, "-m", "autograder.engine.sandboxed.kernel", "-f",
                self.connection_file]


class KernelSession:
    def __init__(self, limits: Limits, use_sandbox: bool = True, library=None):
        self.limits = limits
        self.use_sandbox = use_sandbox
        self.library = library  # the library the kernel sees (autograder.engine.trusted.withheld)
        self.km = None
        self.kc = None
        self.runtime = None
        self.killed_for = None
        self.warm = False  # the kernel came from a fork server (forkserver)
        self._top = None  # host PID of the kernel's top process (bubblewrap, or A)
        self._supervisors: set[int] = set()  # the fork server's A and B: not the kernel's use
        self._kernel = None  # host PID of a forked kernel (C)
        self._server, self.cpu_share = None, cpushare.Share()  # its part of the CPU
        self._stop_watch = threading.Event()

    # -- start and stop ------------------------------------------------------------------
    def start(self) -> None:
        facts = course.facts()
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
               "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONNOUSERSITE": "1", "LANG": "C.UTF-8",
               # as nbgrader's own executor says: notebooks train briefly when graded
               "NBGRADER_EXECUTION": "autograde",
               "COURSE_GRADE_CPU_SECONDS": str(self.limits.cpu_seconds),
               # what the course's pyproject.toml says the kernel loads and observes
               "COURSE_GRADE_PRELOAD": ",".join(facts.preload),
               "COURSE_GRADE_OBSERVATIONS": facts.observations or ""}
        for name in THREAD_VARIABLES:
            if os.environ.get(name):
                env[name] = os.environ[name]
            elif self.limits.kernel_threads:
                env[name] = str(self.limits.kernel_threads)
        if self.use_sandbox and forkserver.enabled() and _WARM["usable"]:
            try:
                self._start_warm(env, facts)
                return self._connect()
            except Exception as error:  # noqa: BLE001 - a fork server's, a forked kernel's
                self._fall_back(error)
        try:
            self._start_cold(env)
            self._connect()
        except Exception as error:  # noqa: BLE001 - said in one sentence, with what to do
            self.stop()
            raise KernelStartError(f"{START_FAILED} ({_one_line(error)}): this machine's "
                                   "set-up, not the notebook. `make doctor` in the course's "
                                   "folder checks its environment; grade again once it is "
                                   "fixed") from None

    def _fall_back(self, error: Exception) -> None:
        """A warm kernel could not start: this process starts its kernels cold from now on
        (each in its own sandbox), and says why in one line."""
        _WARM["usable"] = False
        print(f"course-grade: kernels start cold ({_one_line(error)})", file=sys.stderr,
              flush=True)
        server = self._server[0] if self._server else None
        self._server = None  # not back to the pool: stopped below
        self.stop()
        if server is not None:  # of no further use to this process
            server.stop()
        self._stop_watch = threading.Event()
        self.warm, self._top, self._kernel, self._supervisors = False, None, None, set()

    def _start_cold(self, env: dict) -> None:
        """The kernel as a fresh process: in its own bubblewrap sandbox, or plainly."""
        # short (socket paths < 108 B), and outside the sandbox's writable /tmp and /home,
        # so that the kernel's Landlock rules leave it read-only to the kernel
        self.runtime = Path(tempfile.mkdtemp(prefix="cg-", dir=_runtime_parent()))
        os.chmod(self.runtime, 0o700)
        if self.use_sandbox:
            fonts = sandbox.matplotlib_cache()
            env.update(sandbox.kernel_env(fonts))
            wrapper = sandbox.command(self.runtime, env, self.limits.scratch_mb, fonts,
                                      library=self.library)
            cwd = "/"
        else:
            scratch = self.runtime / "home"
            scratch.mkdir()
            env.update(HOME=str(scratch), MPLCONFIGDIR=str(scratch / ".matplotlib"),
                       COURSE_GRADE_MPL_CACHE=sandbox.matplotlib_cache())
            if self.library is not None:  # the library without the graded exercises first
                env["PYTHONPATH"] = str(self.library)
            wrapper = []
            cwd = str(scratch)
        km = _Manager(transport="ipc", ip=str(self.runtime / "k"),
                      connection_file=str(self.runtime / "conn.json"))
        km.wrapper = wrapper
        probe = "import autograder.engine.sandboxed.kernel"
        self._probe = ([*wrapper, km.python, "-c", probe], env, cwd)
        # the kernel's own start-up chatter (not cell output) is dropped
        km.start_kernel(env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.km = km
        self._top = km.provisioner.process.pid
        self.kc = km.client()

    def _start_warm(self, env: dict, facts) -> None:
        """The kernel forked from a fork server that has TensorFlow loaded already."""
        fonts = sandbox.matplotlib_cache()
        env.update(sandbox.kernel_env(fonts))
        server_env = dict(env, COURSE_GRADE_PRELOAD=",".join(
            forkserver.server_preload(facts.preload, facts.library)))
        key = (server_env, fonts, _runtime_parent())
        self._server = (forkserver.acquire(*key), key)
        server = self._server[0]
        self.runtime = server.new_runtime()
        connection = self.runtime / "conn.json"
        write_connection_file(str(connection), transport="ipc", ip=str(self.runtime / "k"))
        folders = sandbox.library_folders() if self.library is not None else None
        self._top = server.spawn(connection, env, self.limits.scratch_mb, self.library,
                                 folders)
        self.warm = True
        below = processes.descendants(self._top)  # B, then C (the kernel), started
        if len(below) < 2:
            raise KernelStartError(self._why_not_ready("it ended at once"))
        self._supervisors, self._kernel = {self._top, below[0]}, below[1]
        self.kc = _WarmClient(connection_file=str(connection))
        self.kc.watched = self
        self.kc.load_connection_file()

    def _connect(self) -> None:
        self.cpu_share = cpushare.confine(self._pids, self.limits)  # a cgroup of its own
        messages.limit_sockets(self.kc)
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=READY_SECONDS)
        except RuntimeError as error:
            why = self._why_not_ready(error)
            if not self.warm:  # the caller stops a warm one (its server with it)
                self.stop()
            raise KernelStartError(why) from None
        threading.Thread(target=self._watch, daemon=True).start()

    def _why_not_ready(self, error: Exception | str) -> str:
        """Why the kernel died before it was ready, as far as can be told: what a forked
        kernel said (autograder.engine.sandboxed.forks), or what the same command says when it only
        imports the kernel (a cold one)."""
        said = ""
        if self.warm and self.runtime is not None:
            try:
                with open(self.runtime / forks.START_ERROR, errors="replace") as handle:
                    said = handle.read(400)
            except OSError:
                pass
        elif getattr(self, "_probe", None):
            command, env, cwd = self._probe
            try:
                done = subprocess.run(command, env=env, cwd=cwd, capture_output=True,
                                      text=True, errors="replace", timeout=60)
                lines = [line for line in done.stderr.splitlines() if line.strip()]
                said = lines[-1] if done.returncode and lines else ""
            except (OSError, subprocess.SubprocessError):
                pass
        said = "".join(c if c.isprintable() else " " for c in said).strip()
        what = "a forked kernel" if self.warm else "the kernel"
        return f"{what} died before it was ready" + (f": {said}" if said else f" ({error})")

    def stop(self) -> None:
        self._stop_watch.set()
        if self.kc is not None:
            self.kc.stop_channels()
        self.kill_tree(wait=self.warm)  # a warm server's next kernel waits for the last
        if self.km is not None:
            try:
                self.km.cleanup_resources()
            except Exception:  # noqa: BLE001 - best effort on a dead kernel
                pass
        self._cleanup()
        self.km = self.kc = None

    def _cleanup(self) -> None:
        if self.runtime is not None:
            shutil.rmtree(self.runtime, ignore_errors=True)
            self.runtime = None
        if self._server is not None:
            server, key = self._server
            if self._pids():  # a process of this kernel outlived SIGKILL: no next kernel
                server.stop()  # may share the server with it
            else:
                forkserver.release(server, *key)
            self._server = None

    def _process(self):
        try:
            return psutil.Process(self._top) if self._top else None
        except psutil.Error:
            return None

    def _pids(self) -> list[int]:
        """The kernel's process tree: its top process (bubblewrap, or the fork server's
        child A) first."""
        if self._top is None or not os.path.exists(f"/proc/{self._top}"):
            return []
        return [self._top, *processes.descendants(self._top)]

    def _tree(self) -> list:
        pids = self._pids()
        return processes.tree(pids[0]) if pids else []

    def stop_for(self, reason: str) -> None:
        """Stop the kernel, with all it started, because it passed a limit (`reason`, which
        the cell that died reports)."""
        self.killed_for = reason
        self.kill_tree()

    def kill_tree(self, wait: bool = True) -> None:
        """SIGKILL to the kernel and all it started; without `wait`, the grader goes on
        while they finish dying."""
        processes.end(self._tree(), background=not wait)

    def alive(self) -> bool:
        top = self._process()
        return top is not None and top.is_running() and top.status() != psutil.STATUS_ZOMBIE

    def over_limits(self, pids: list[int] | None = None) -> str | None:
        """Why the kernel's process tree (`pids`: all of it) must be stopped now, or None."""
        tree = self._pids() if pids is None else pids
        used = sum(processes.resident_bytes(p) for p in tree if p not in self._supervisors)
        if used > self.limits.memory_mb * 2**20:
            return (f"the kernel used more than {self.limits.memory_mb} MB of memory and was "
                    "stopped")
        if self.use_sandbox and processes.folder_bytes(self.runtime) > RUNTIME_QUOTA:
            return (f"the kernel wrote more than {RUNTIME_QUOTA >> 20} MB into its runtime "
                    "folder and was stopped")
        if len(tree) > self.limits.max_processes:
            return (f"the kernel started more than {self.limits.max_processes} processes and "
                    "was stopped")
        return None

    def _watch(self) -> None:
        while not self._stop_watch.wait(WATCH_INTERVAL):
            pids = self._pids()
            if not pids:
                return
            reason = self.over_limits(pids)
            if reason:
                self.stop_for(reason)
                return

    def interrupt(self) -> None:
        """SIGINT to the kernel itself (not to bubblewrap or the fork server's supervisors,
        whose death ends the sandbox)."""
        if self._kernel is not None:
            try:
                psutil.Process(self._kernel).send_signal(signal.SIGINT)
            except psutil.Error:
                pass
            return
        for process in self._tree():
            try:
                kernel_module = "autograder.engine.sandboxed.kernel"
                if any(kernel_module == part for part in process.cmdline()) and \
                        not process.name().startswith("bwrap"):
                    process.send_signal(signal.SIGINT)
            except psutil.Error:
                pass

    # -- one cell (autograder.engine.trusted.cellrun) --------------------------------------------
    def run(self, code: str, timeout: float | None = None) -> CellRun:
        """Run a cell of the notebook; its outputs, capped, and how it ended."""
        return cellrun.execute(self, code, timeout or self.limits.timeout)

    def execute(self, code: str, timeout: float, on_input=None) -> CellRun:
        """`code` run with at most `timeout` seconds, `on_input` answering the kernel's
        input requests (autograder.engine.trusted.cellrun.execute)."""
        return cellrun.execute(self, code, timeout, on_input)


_WARM = {"usable": True}  # False once a warm kernel could not start in this process


class _WarmClient(BlockingKernelClient):
    """The client of a forked kernel: whether the kernel lives is asked of its process, so
    that `wait_for_ready` (its one caller) stops at once on a kernel that died, not after
    waiting 120 s for heartbeats that will never come."""

    async def _async_is_alive(self) -> bool:
        if not self.watched.alive():
            raise RuntimeError("Kernel died before replying to kernel_info")
        return True


def _one_line(error: Exception) -> str:
    return (" ".join(str(error).split()) or type(error).__name__)[:400]


def _runtime_parent() -> str | None:
    return RUNTIME_PARENT if os.access(RUNTIME_PARENT, os.W_OK) else None
