"""The fork server itself, as it runs in the sandbox (`python -m
autograder.engine.sandboxed.forks`).

`serve` imports the preload it was given, says READY on stdout, and then forks, for each
request line on stdin, the three processes of one warm kernel: A (new namespaces and
mounts), B (PID 1 of the new PID namespace, with a /proc of its own) and C (every
capability dropped, then the grading kernel). What each one isolates, and why, is in
autograder.engine.trusted.forkserver, the grader's side that starts this server and asks it for
kernels.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from autograder.engine.sandboxed.namespaces import KERNEL_UID, SMALL_TMPFS

READY = "ready"
START_ERROR = "start-error"  # what stopped a kernel before it was ready, in its runtime folder


class ChildFailed(Exception):
    """A child of the server could not set up its kernel: what it said, word for word."""


def _reap(*_) -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def serve() -> None:
    """Import the preload it was given (forkserver.server_preload), say READY, then fork a
    kernel for each request line."""
    import importlib

    from autograder.engine.sandboxed import kernel, namespaces  # noqa: F401 - loaded for the children

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
        except ChildFailed as error:
            reply = {"error": str(error)}
        except Exception as error:  # noqa: BLE001 - the grader falls back and says why
            reply = {"error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def _fork_kernel(request: dict) -> int:
    """Fork A (and below it B and the kernel C); A's PID once C is about to start its
    kernel, or the error that stopped it."""
    report_r, report_w = os.pipe()
    try:
        pid = _fork(_isolate, request, report_w, close=report_r)  # A
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(report_w)
    said = b""
    try:
        while chunk := os.read(report_r, 4096):
            said += chunk
    finally:
        os.close(report_r)
    text = said.decode(errors="replace")
    if text != "ok":
        raise ChildFailed(text.removeprefix("error: ") or "the child ended at once")
    return pid


def _fork(body, request: dict, report: int, close: int | None = None) -> int:
    """Fork a child that runs `body(request, report)` and never returns: what stopped it
    is said on `report` before it ends. The child's PID."""
    pid = os.fork()
    if pid == 0:
        if close is not None:
            os.close(close)
        try:
            body(request, report)
        except BaseException as error:  # noqa: BLE001 - said to the server, then gone
            _say(report, f"error: {type(error).__name__}: {error}")
        os._exit(70)
    return pid


def _say(fd: int, text: str) -> None:
    try:
        os.write(fd, text.encode())
    except OSError:
        pass


def _isolate(request: dict, report: int) -> None:
    """A: the new namespaces and mounts; then B and C below it. A waits for B."""
    from autograder.engine.sandboxed import namespaces as ns

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ns.die_with_parent(signal.SIGKILL)
    os.setsid()
    ns.unshare(ns.ALL)
    ns.map_user(KERNEL_UID, KERNEL_UID)
    ns.private_mounts()
    # fresh, but for what the kernel needs beneath them (its Python, the server's folder:
    # a checkout or a runtime folder under /tmp or the home)
    keep = [*request.get("keep", ()), request["folder"]]
    ns.fresh_tmpfs(request["home"], int(request["scratch_bytes"]), KERNEL_UID, KERNEL_UID,
                   keep=keep)
    ns.fresh_tmpfs("/tmp", SMALL_TMPFS, KERNEL_UID, KERNEL_UID, 0o1777, keep=keep)
    # the server's /dev is one tmpfs for all its kernels: read-only below, with a
    # fresh /dev/shm of this kernel's own
    ns.read_only("/dev")
    ns.fresh_tmpfs("/dev/shm", SMALL_TMPFS, KERNEL_UID, KERNEL_UID, 0o1777, keep=keep)
    # the server's folder (its passwd and group, the kernels' runtime folders) read-only,
    # but for this kernel's runtime folder (it binds its sockets there)
    runtime = str(Path(request["connection_file"]).parent)
    ns.own_mount(runtime)
    ns.read_only(request["folder"])
    for name, folder in (request.get("library_folders") or {}).items():
        # each library package: its copy without this notebook's answers, in its place
        ns.bind_read_only(os.path.join(request["library"], name), folder)
    # every library copy of the server out of sight (another notebook's copy holds this
    # notebook's answers)
    ns.tmpfs(request["libraries"], 2**20, KERNEL_UID, KERNEL_UID, 0o555)
    ns.tmpfs(request["proc_witness"], 4096, KERNEL_UID, KERNEL_UID, 0o555)  # out of sight
    ns.loopback_up()
    b = _fork(_reaper, request, report)
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
    from autograder.engine.sandboxed import namespaces as ns

    ns.die_with_parent(signal.SIGKILL)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    # a /proc of this PID namespace: the kernel's PIDs are the ones /proc shows (psutil,
    # multiprocessing), and no process outside it is listed
    ns.proc("/proc")
    c = _fork(_kernel, request, report)
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

    from autograder.engine.sandboxed import kernel
    from autograder.engine.sandboxed import namespaces as ns

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
    try:
        kernel.main()
    except BaseException as error:  # noqa: BLE001 - `report` is closed: said in a file
        _note(Path(request["connection_file"]).parent / START_ERROR, error)
        os._exit(70)
    os._exit(0)


def _note(path: Path, error: BaseException) -> None:
    """What stopped the kernel, for the grader (which reads it only of a kernel that died
    before it was ready; once ready, the kernel cannot write there: Landlock)."""
    try:
        path.write_text(f"{type(error).__name__}: {error}"[:400])
    except OSError:
        pass


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
