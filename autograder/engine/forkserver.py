"""Warm kernels: TensorFlow imported once per grading worker, a fresh sandboxed child per kernel.

Importing TensorFlow and Keras costs a grading kernel about 8 s of CPU before its first
cell (a 2 GHz EPYC). A `ForkServer` pays that once: it is a process in the sandbox
(autograder.engine.sandbox) that imports the course's third-party preload (pyproject.toml:
[tool.course-grade] preload, the modules outside the course library) and then only forks.
Each kernel it is asked for is a child with namespaces of its own (autograder.engine.namespaces):

    fork server (sandbox)  ->  A: new user, mount, PID, network, IPC and UTS namespaces;
                                  a fresh home, /tmp and /dev/shm; the library without
                                  the graded answers; loopback up
                               -> B: PID 1 of the new namespace, with a /proc of
                                  its own (read-only); reaps orphans
                                  -> C: every capability dropped, then the grading kernel
                                     (autograder.engine.kernel), as a fresh one would start

So a kernel sees nothing another kernel left: no file (its home and /tmp are new), no
process (its own PID namespace and /proc; when B ends, everything in it ends), no socket (its own
network namespace), no other library copy (hidden under an empty tmpfs). It cannot reach
the fork server: that is outside its PID namespace, not dumpable (its memory cannot be
read or traced), and no other job's data is ever in it. The server holds only the
imported modules; the course library, and so any answer, is imported by C alone.

One server serves one kernel at a time (`acquire`/`release`), so the runtime folder it
shares holds only that kernel's sockets. Where the server cannot start or fork (no nested
user namespaces), `KernelSession` starts each kernel in its own sandbox as before.
`COURSE_GRADE_FORKSERVER=0` turns warm kernels off.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from autograder import processes

READY = "ready"
START_SECONDS = 300  # the server's imports, on a slow and busy machine
FORK_SECONDS = 60  # one child set up and its kernel about to start
SWITCH = "COURSE_GRADE_FORKSERVER"
KERNEL_UID = 1000


class ForkServerError(Exception):
    """The fork server could not start, or could not give a kernel."""


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


# ---------------------------------------------------------------------------------------
# The grader's side
# ---------------------------------------------------------------------------------------

class ForkServer:
    """One fork server, started in the sandbox with `env`; kernels come from `spawn`."""

    def __init__(self, env: dict[str, str], fonts: str, parent: str | None):
        from autograder.engine import sandbox

        self.folder = Path(tempfile.mkdtemp(prefix="cg-fs-", dir=parent))
        os.chmod(self.folder, 0o700)
        self.runs, self.libraries = self.folder / "run", self.folder / "lib"
        self.runs.mkdir()
        self.libraries.mkdir()
        self._copies: dict[str, Path] = {}
        command = sandbox.command(self.folder, env, 64, fonts,
                                  read_only=(self.libraries,), proc_witness=True)
        self.process = subprocess.Popen(
            [*command, sys.executable, "-m", "autograder.engine.forkserver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/")
        try:
            answer = self._read(START_SECONDS)
        except ForkServerError:
            self.stop()
            raise
        if answer != READY:
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
              library: Path | None, library_folder: str | None) -> int:
        """Start a kernel on `connection_file`; the host PID of its top process (A)."""
        from autograder.engine import sandbox

        request = {"connection_file": str(connection_file), "env": env,
                   "scratch_bytes": scratch_mb * 2**20, "home": env["HOME"],
                   "libraries": str(self.libraries), "folder": str(self.folder),
                   "proc_witness": sandbox.PROC_WITNESS}
        if library is not None and library_folder:
            request.update(library=str(self._copy(Path(library))),
                           library_folder=library_folder)
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


# ---------------------------------------------------------------------------------------
# The server's side, in the sandbox
# ---------------------------------------------------------------------------------------

def _reap(*_) -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def server_preload(preload, library: str) -> list[str]:
    """The modules a fork server imports: the course's preload without the course library
    (each kernel imports its own copy of that, the graded answers withheld)."""
    return [m for m in preload
            if not (library and (m == library or m.startswith(library + ".")))]


def serve() -> None:
    """Import the preload it was given (server_preload), say READY, then fork a kernel
    for each request line."""
    import importlib

    from autograder.engine import kernel, namespaces  # noqa: F401 - loaded for the children

    for module in filter(None, os.environ.get(kernel.PRELOAD, "").split(",")):
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the kernel's own import will say what is wrong
            pass
    namespaces.set_dumpable(False)
    signal.signal(signal.SIGCHLD, _reap)
    out = sys.stdout
    out.write(READY + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            reply = {"pid": _fork_kernel(json.loads(line))}
        except Exception as error:  # noqa: BLE001 - the grader falls back and says why
            reply = {"error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def _fork_kernel(request: dict) -> int:
    """Fork A (and below it B and the kernel C); A's PID once C is about to start its
    kernel, or the error that stopped it."""
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # A
        os.close(report_r)
        try:
            _child(request, report_w)
        except BaseException as error:  # noqa: BLE001 - said to the server, then gone
            _say(report_w, f"error: {type(error).__name__}: {error}")
        os._exit(70)
    os.close(report_w)
    said = b""
    while chunk := os.read(report_r, 4096):
        said += chunk
    os.close(report_r)
    text = said.decode(errors="replace")
    if text != "ok":
        raise ForkServerError(text.removeprefix("error: ") or "the child ended at once")
    return pid


def _say(fd: int, text: str) -> None:
    try:
        os.write(fd, text.encode())
    except OSError:
        pass


def _child(request: dict, report: int) -> None:
    """A: the new namespaces and mounts; then B and C below it. A waits for B."""
    from autograder.engine import namespaces as ns

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ns.die_with_parent(signal.SIGKILL)
    os.setsid()
    ns.unshare(ns.ALL)
    ns.map_user(KERNEL_UID, KERNEL_UID)
    ns.private_mounts()
    ns.tmpfs(request["home"], int(request["scratch_bytes"]), KERNEL_UID, KERNEL_UID)
    ns.tmpfs("/tmp", 64 * 2**20, KERNEL_UID, KERNEL_UID, 0o1777)
    # the server's /dev is one tmpfs for all its kernels: read-only below, with a
    # fresh /dev/shm of this kernel's own
    ns.read_only("/dev")
    ns.tmpfs("/dev/shm", 64 * 2**20, KERNEL_UID, KERNEL_UID, 0o1777)
    # the server's folder (its passwd and group, the kernels' runtime folders) read-only,
    # but for this kernel's runtime folder (it binds its sockets there)
    runtime = str(Path(request["connection_file"]).parent)
    ns.own_mount(runtime)
    ns.read_only(request["folder"])
    if request.get("library"):
        ns.bind_read_only(request["library"], request["library_folder"])
    # every library copy of the server out of sight (another notebook's copy holds this
    # notebook's answers)
    ns.tmpfs(request["libraries"], 2**20, KERNEL_UID, KERNEL_UID, 0o555)
    ns.tmpfs(request["proc_witness"], 4096, KERNEL_UID, KERNEL_UID, 0o555)  # out of sight
    ns.loopback_up()
    b = os.fork()
    if b == 0:
        _reaper(request, report)
    os.close(report)
    _close_files()
    while True:
        try:
            _, status = os.waitpid(b, 0)
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _reaper(request: dict, report: int) -> None:
    """B: PID 1 of the kernel's namespace. It starts C and reaps every orphan; when C
    ends, B ends, and with it everything still in the namespace."""
    from autograder.engine import namespaces as ns

    ns.die_with_parent(signal.SIGKILL)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    # a /proc of this PID namespace: the kernel's PIDs are the ones /proc shows (psutil,
    # multiprocessing), and no process outside it is listed
    ns.proc("/proc")
    c = os.fork()
    if c == 0:
        try:
            _kernel(request, report)
        except BaseException as error:  # noqa: BLE001 - said to the server, then gone
            _say(report, f"error: {type(error).__name__}: {error}")
        os._exit(70)
    os.close(report)
    _close_files()
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        if pid == c:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _kernel(request: dict, report: int) -> None:
    """C: no capability left; then the grading kernel, as a fresh process starts it."""
    import random

    from autograder.engine import kernel
    from autograder.engine import namespaces as ns

    ns.die_with_parent(signal.SIGKILL)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ns.new_session_keyring()
    ns.drop_privileges()
    ns.set_dumpable(True)
    os.chdir(request["home"])
    os.environ.clear()
    os.environ.update(request["env"])
    _close_files(keep=report)
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    _say(report, "ok")
    os.close(report)
    sys.argv = [sys.argv[0], "-f", request["connection_file"]]
    kernel.main()
    os._exit(0)


def _close_files(keep: int | None = None) -> None:
    """Standard streams to /dev/null; every other inherited descriptor closed (the
    server's pipes to the grader among them)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    top = os.sysconf("SC_OPEN_MAX")
    if keep is None:
        os.closerange(3, top)
    else:
        os.closerange(3, keep)
        os.closerange(keep + 1, top)


if __name__ == "__main__":
    serve()
