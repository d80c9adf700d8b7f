"""Warm kernels: TensorFlow imported once per grading worker, a fresh sandboxed child per kernel.

Importing TensorFlow and Keras costs a grading kernel about 8 s of CPU before its first
cell (a 2 GHz EPYC). A `ForkServer` pays that once: it is a process in the sandbox
(autograder.engine.trusted.sandbox) that imports the course's third-party preload (pyproject.toml:
[tool.course-grade] preload, the modules outside the course library) and then only forks.
Each kernel it is asked for is a child with namespaces of its own
(autograder.engine.sandboxed.namespaces):

    fork server (sandbox)  ->  A: new user, mount, PID, network, IPC and UTS namespaces;
                                  a fresh home, /tmp and /dev/shm; the library without
                                  the graded answers; loopback up
                               -> B: PID 1 of the new namespace, with a /proc of
                                  its own (read-only); reaps orphans
                                  -> C: every capability dropped, then the grading kernel
                                     (autograder.engine.sandboxed.kernel), as a fresh one would
                                     start

So a kernel sees nothing another kernel left: no file (its home and /tmp are new), no
process (its own PID namespace and /proc; when B ends, everything in it ends), no socket (its own
network namespace), no other library copy (hidden under an empty tmpfs). It cannot reach
the fork server: that is outside its PID namespace, not dumpable (its memory cannot be
read or traced), and no other job's data is ever in it. The server holds only the
imported modules; the course library, and so any answer, is imported by C alone.

One server serves one kernel at a time (`acquire`/`release`), so the runtime folder it
shares holds only that kernel's sockets. Where the server cannot start or fork (no nested
user namespaces), or a forked kernel dies before it is ready, `KernelSession` starts this
and each later kernel of its process in its own sandbox, and says why in one line.
`COURSE_GRADE_FORKSERVER=0` turns warm kernels off.

This module is the grader's side (`ForkServer`, `acquire`, `release`); the server's side,
which runs in the sandbox and forks A, B and C, is autograder.engine.sandboxed.forks.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from autograder import processes
from autograder.engine.sandboxed import forks

START_SECONDS = 300  # the server's imports, on a slow and busy machine
FORK_SECONDS = 60  # one child set up and its kernel about to start
SWITCH = "COURSE_GRADE_FORKSERVER"


class ForkServerError(Exception):
    """The fork server could not start, or could not give a kernel."""


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


class ForkServer:
    """One fork server, started in the sandbox with `env`; kernels come from `spawn`."""

    def __init__(self, env: dict[str, str], fonts: str, parent: str | None):
        from autograder.engine.trusted import sandbox

        self.folder = Path(tempfile.mkdtemp(prefix="cg-fs-", dir=parent))
        os.chmod(self.folder, 0o700)
        self.runs, self.libraries = self.folder / "run", self.folder / "lib"
        self.runs.mkdir()
        self.libraries.mkdir()
        self._copies: dict[str, Path] = {}
        command = sandbox.command(self.folder, env, 64, fonts,
                                  read_only=(self.libraries,), proc_witness=True)
        self.process = subprocess.Popen(
            [*command, sys.executable, "-m", "autograder.engine.sandboxed.forks"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/")
        try:
            answer = self._read(START_SECONDS)
        except ForkServerError:
            self.stop()
            raise
        if answer != forks.READY:
            self.stop()
            raise ForkServerError(f"the fork server did not start ({answer!r})")

    def alive(self) -> bool:
        return self.process.poll() is None

    def new_runtime(self) -> Path:
        """A kernel's runtime folder, inside the folder the server's children can see."""
        runtime = Path(tempfile.mkdtemp(prefix="k-", dir=self.runs))
        os.chmod(runtime, 0o700)
        return runtime

    def spawn(self, connection_file: Path, env: dict[str, str], scratch_mb: int,
              library: Path | None, library_folders: dict[str, str] | None) -> int:
        """Start a kernel on `connection_file`; the host PID of its top process (A)."""
        from autograder.engine.trusted import sandbox

        request = {"connection_file": str(connection_file), "env": env,
                   "scratch_bytes": scratch_mb * 2**20, "home": env["HOME"],
                   "libraries": str(self.libraries), "folder": str(self.folder),
                   "proc_witness": sandbox.PROC_WITNESS,
                   "keep": [target for _, target in sandbox.python_binds()]}
        if library is not None and library_folders:
            request.update(library=str(self._copy(Path(library))),
                           library_folders=library_folders)
        self._write(json.dumps(request))
        answer = self._read(FORK_SECONDS)
        try:
            reply = json.loads(answer)
        except ValueError:
            reply = {"error": f"unreadable answer {answer[:200]!r}"}
        if "pid" not in reply:
            raise ForkServerError(f"the fork server gave no kernel: {reply.get('error')}")
        return self._host_pid(int(reply["pid"]))

    def stop(self) -> None:
        if self.process.poll() is None:
            processes.end(processes.tree(self.process.pid))
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------
    def _copy(self, library: Path) -> Path:
        """The library copy where the server's sandbox sees it (read-only)."""
        key = str(library.resolve())
        if key not in self._copies:
            target = self.libraries / f"{len(self._copies)}" / library.name
            shutil.copytree(library, target)
            self._copies[key] = target
        return self._copies[key]

    def _write(self, line: str) -> None:
        try:
            self.process.stdin.write((line + "\n").encode())
            self.process.stdin.flush()
        except (OSError, ValueError) as error:
            raise ForkServerError(f"the fork server is gone ({error})") from None

    def _read(self, seconds: float) -> str:
        stream = self.process.stdout
        ready, _, _ = select.select([stream], [], [], seconds)
        if not ready:
            raise ForkServerError(f"the fork server did not answer within {seconds:g} s")
        line = stream.readline()
        if not line:
            raise ForkServerError("the fork server is gone")
        return line.decode(errors="replace").strip()

    def _host_pid(self, pid: int) -> int:
        """The PID on this machine of the server's child `pid` (a PID in the sandbox)."""
        for candidate in processes.descendants(self.process.pid):
            try:
                with open(f"/proc/{candidate}/status") as handle:
                    for line in handle:
                        if line.startswith("NSpid:"):
                            seen = line.split()[1:]
                            if len(seen) == 2 and int(seen[1]) == pid:
                                return candidate
                            break
            except (OSError, ValueError):
                continue
        raise ForkServerError(f"the fork server's child {pid} is not to be found")


_FREE: dict[tuple, list[ForkServer]] = {}
_LOCK = threading.Lock()


def acquire(env: dict[str, str], fonts: str, parent: str | None) -> ForkServer:
    """A fork server started with `env` that serves no other kernel now (started when
    none is free: the first kernel of a worker pays the imports)."""
    key = (tuple(sorted(env.items())), fonts, parent)
    with _LOCK:
        free = _FREE.setdefault(key, [])
        while free:
            server = free.pop()
            if server.alive():
                return server
            server.stop()
    server = ForkServer(env, fonts, parent)
    atexit.register(server.stop)  # its folder goes with this process
    return server


def release(server: ForkServer, env: dict[str, str], fonts: str, parent: str | None) -> None:
    """`server`'s kernel has ended: it may serve the next one."""
    if not server.alive():
        server.stop()
        return
    with _LOCK:
        _FREE.setdefault((tuple(sorted(env.items())), fonts, parent), []).append(server)


def stop_all() -> None:
    with _LOCK:
        servers = [s for group in _FREE.values() for s in group]
        _FREE.clear()
    for server in servers:
        server.stop()


def server_preload(preload, library) -> list[str]:
    """The modules a fork server imports: the course's preload without the course
    library's packages (`library`: their names; each kernel imports its own copy of them,
    the graded answers withheld)."""
    packages = {library} if isinstance(library, str) else set(library)
    return [m for m in preload if m.split(".")[0] not in packages]
