"""The sandbox a student's kernel runs in: Debian's bubblewrap (unprivileged namespaces).

Inside it the kernel sees the system's programs and libraries read-only, the course's
Python environment and its two packages read-only, and nothing else of the machine: no
network (a network namespace of its own, loopback only), no /root or /home, no checkout
(solutions, tests, gradebooks), no other student's files. Its one writable place is a
private tmpfs of `scratch_mb` MB that is its home and working folder; /tmp is another small
tmpfs. It has its own process tree (PID namespace): it cannot see or signal the grader's
processes, and when the kernel ends, everything it started ends with it. Its user is
`student` (uid 1000) in a user namespace, without capabilities.

The memory limit and the process count are kept from outside by autograder.engine.trusted.session,
the wall-clock limit and the output cap by autograder.engine.trusted.cellrun; the CPU-time limit is
RLIMIT_CPU, set by the kernel at start.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.engine.sandboxed.namespaces import KERNEL_UID, SMALL_TMPFS  # noqa: F401

HOME = "/home/student"
FONT_CACHE = "/opt/course-grade/matplotlib"  # the grader's font cache, read-only
PROC_WITNESS = "/opt/course-grade/proc"  # a whole /proc, for the fork server's children
ETC_FILES = ("hosts", "nsswitch.conf", "host.conf", "gai.conf", "ld.so.cache", "ld.so.conf",
             "ld.so.conf.d", "localtime", "ssl", "ca-certificates", "fonts", "alternatives",
             "mime.types", "os-release")


def bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") where a sandbox can be had here; else (False, why, in one sentence)."""
    if not sys.platform.startswith("linux"):
        return False, f"the sandbox needs Linux namespaces (this is {sys.platform})"
    program = bwrap()
    if program is None:
        return False, ("bubblewrap is not installed (Debian/Ubuntu: `apt-get install "
                       "bubblewrap`)")
    probe = subprocess.run([program, "--unshare-all", "--unshare-user", "--die-with-parent",
                            "--ro-bind", "/", "/", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"bubblewrap cannot create namespaces here ({reason})"
    return True, ""


def _package_dirs() -> dict[str, str]:
    """The grader's package and the course's library packages (pyproject.toml), name ->
    folder (found, not imported: the library imports TensorFlow)."""
    import importlib.util

    from autograder import course

    found = {}
    for name in ("autograder", *course.facts().library):
        spec = importlib.util.find_spec(name)
        found[name] = str(Path(spec.origin).resolve().parent)
    return found


def library_folders() -> dict[str, str]:
    """Where each of the course library's packages is (the folder its withheld copy is
    shown at), name -> folder."""
    return {name: folder for name, folder in _package_dirs().items() if name != "autograder"}


def python_binds(library: Path | None = None) -> list[tuple[str, str]]:
    """(host folder, where the kernel sees it) of the course's Python: its environment's
    prefixes outside /usr, the grader's package and the course library's packages (each
    package's folder in `library`, a withheld copy, in its place, where given). Wherever
    the checkout is (/tmp, a home folder), these folders and no others of it are seen: the
    fork server's children bind them back over their fresh /tmp and home
    (autograder.engine.sandboxed.forks)."""
    binds = []
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    for prefix in sorted(prefixes):
        if not prefix.startswith("/usr"):
            binds.append((prefix, prefix))
    if sys.prefix != os.path.realpath(sys.prefix):
        binds.append((os.path.realpath(sys.prefix), sys.prefix))
    for name, folder in _package_dirs().items():
        shown = str(library / name) if library is not None and name != "autograder" else folder
        binds.append((shown, folder))
    return binds


def command(runtime: Path, env: dict[str, str], scratch_mb: int = 512,
            fonts: str = "", library: Path | None = None, read_only=(),
            proc_witness: bool = False) -> list[str]:
    """The bwrap command line that runs the rest of the command in the sandbox.

    `runtime` (the kernel's connection file and sockets) is the one host folder bound
    writable (the kernel gives up writing there once its sockets are bound:
    autograder.engine.sandboxed.kernel); `env` is the kernel's whole environment; `fonts`, the
    grader's
    matplotlib cache, is seen read-only at FONT_CACHE; `library`, where given, holds the
    packages seen in place of the course library's (a copy without the graded notebook's
    answers: autograder.engine.trusted.withheld);
    `read_only` folders inside `runtime` are seen read-only (the fork server's library
    copies: autograder.engine.trusted.forkserver). With `proc_witness`, this machine's /proc is
    also seen, read-only, at PROC_WITNESS: Linux lets a namespace mount a /proc of its own
    only where a whole one is visible already (the fork server's children mount one each,
    and hide this one).
    """
    args = [bwrap(), "--unshare-all", "--unshare-user", "--uid", str(KERNEL_UID),
            "--gid", str(KERNEL_UID), "--hostname", "grading", "--die-with-parent",
            "--new-session", "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
            "--size", str(SMALL_TMPFS), "--tmpfs", "/dev/shm",
            "--size", str(SMALL_TMPFS), "--tmpfs", "/tmp",
            # the home before any bind: a checkout under /tmp or /home/student shows
            # through these fresh folders only where bound below (its Python and packages)
            "--size", str(scratch_mb * 2**20), "--tmpfs", HOME]
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    (runtime / "passwd").write_text(
        f"student:x:{KERNEL_UID}:{KERNEL_UID}:student:{HOME}:/bin/sh\n")
    (runtime / "group").write_text(f"student:x:{KERNEL_UID}:\n")
    args += ["--ro-bind", str(runtime / "passwd"), "/etc/passwd",
             "--ro-bind", str(runtime / "group"), "/etc/group"]
    for source, target in python_binds(library):
        args += ["--ro-bind", source, target]
    if fonts:
        args += ["--ro-bind-try", fonts, FONT_CACHE]
    if proc_witness:
        args += ["--ro-bind", "/proc", PROC_WITNESS]
    args += ["--bind", str(runtime), str(runtime)]
    for folder in read_only:
        args += ["--ro-bind", str(folder), str(folder)]
    args += ["--chdir", HOME, "--remount-ro", "/", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--"]


def kernel_env(fonts: str) -> dict:
    return dict(HOME=HOME, MPLCONFIGDIR=f"{HOME}/.matplotlib",
                COURSE_GRADE_SANDBOXED="1",
                COURSE_GRADE_MPL_CACHE=FONT_CACHE if fonts else "")


def matplotlib_cache() -> str:
    """The grader's matplotlib font cache, copied into each kernel's home at start (so no
    kernel spends seconds building its own)."""
    base = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib")
    return base if os.path.isdir(base) else ""
