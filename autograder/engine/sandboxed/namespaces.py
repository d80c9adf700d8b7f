"""The Linux calls that give a forked kernel namespaces of its own
(autograder.engine.sandboxed.forks).

They run inside the sandbox, as its unprivileged user. A new user namespace gives a process
every capability over the namespaces it creates with it, and over nothing else: that is
enough to mount a fresh home and /tmp, to show the library without the graded answers, and
to bring up a loopback device. `drop_privileges` then gives every capability up for good,
before any of the student's code runs. Mounts made in the sandbox around it stay locked:
no process below can remove them (Linux's rule for mounts seen from a less privileged
user namespace).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

KERNEL_UID = 1000  # the kernel's user and group in its user namespace (`student`)
SMALL_TMPFS = 64 * 2**20  # bytes of its /tmp and of its /dev/shm

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
ALL = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def unshare(flags: int = ALL) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def map_user(uid: int, gid: int) -> None:
    """In the new user namespace, the same user and group as outside it (and no others)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def encode(text):
        return None if text is None else text.encode()

    _check(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags),
                       encode(data)), f"mount on {target}")


def private_mounts() -> None:
    """Mounts made from now on are this namespace's alone."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def tmpfs(target: str, size: int, uid: int, gid: int, mode: int = 0o755) -> None:
    """A fresh, empty tmpfs of `size` bytes on `target`, owned by uid:gid."""
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={size},mode={mode:o},uid={uid},gid={gid}")


def fresh_tmpfs(target: str, size: int, uid: int, gid: int, mode: int = 0o755,
                keep=()) -> None:
    """`tmpfs` on `target`, but for the folders of `keep` beneath it: each is bound back at
    its place, as it was (read-only where it was), and nothing else of what `target` held
    is seen. (A checkout under /tmp or the home: its Python must stay, its other files were
    never there.)"""
    held = []
    try:
        for path in beneath(target, keep):
            held.append((path, os.open(path, os.O_PATH | os.O_DIRECTORY)))
        tmpfs(target, size, uid, gid, mode)
        for path, fd in held:  # the folder under the new tmpfs, reached by its descriptor
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    finally:
        for _, fd in held:
            os.close(fd)


def beneath(target: str, paths) -> list[str]:
    """The folders of `paths` strictly beneath `target` that exist, none beneath another."""
    top = os.path.normpath(target)
    found = sorted({os.path.normpath(p) for p in paths
                    if os.path.commonpath([top, os.path.normpath(p)]) == top
                    and os.path.normpath(p) != top and os.path.isdir(p)})
    return [p for p in found if not any(p.startswith(q + os.sep) for q in found)]


def bind_read_only(source: str, target: str) -> None:
    """`source` seen at `target`, read-only (keeping the flags the sandbox locked)."""
    _mount(source, target, None, MS_BIND | MS_REC)
    kept = os.statvfs(source).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def proc(target: str) -> None:
    """A new /proc at `target`, of the caller's PID namespace, read-only (the /proc Linux
    found visible already is read-only: a new one may not be more)."""
    _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)


def read_only(target: str) -> None:
    """The mount at `target` read-only from now on (device nodes on it still work)."""
    kept = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def own_mount(target: str) -> None:
    """`target` a mount of its own (bound onto itself), so that it keeps its flags when
    the folder around it is made read-only."""
    _mount(target, target, None, MS_BIND)


def new_session_keyring() -> None:
    """A new, empty session keyring: no key of an earlier kernel's session is reachable."""
    import platform

    keyctl = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
    if keyctl is None:
        return
    if _libc.syscall(keyctl, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        errno = ctypes.get_errno()
        if errno != 38:  # ENOSYS: a Linux without keyrings
            raise OSError(errno, f"keyctl: {os.strerror(errno)}")


def loopback_up() -> None:
    """Bring up `lo` in this (new) network namespace: the only device it has."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh14s", b"lo", 0, b"")
        flags = struct.unpack("16sh14s", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh14s", b"lo", flags | iff_up, b""))


def die_with_parent(signal_number: int) -> None:
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0), "PR_SET_PDEATHSIG")


def set_dumpable(on: bool) -> None:
    """Off: no process of this user may read this one's memory or trace it, unless it
    holds CAP_SYS_PTRACE where this process was started (no kernel does)."""
    _check(_libc.prctl(PR_SET_DUMPABLE, int(on), 0, 0, 0), "PR_SET_DUMPABLE")


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_privileges() -> None:
    """Give up every capability (bounding, ambient, effective, permitted, inheritable) and
    the right to gain any (no_new_privs); OSError unless /proc says all are gone."""
    for capability in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this Linux knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _Header(CAPABILITY_VERSION_3, 0), (_Data * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    with open("/proc/self/status") as handle:
        held = {line.split(":")[0]: int(line.split()[1], 16) for line in handle
                if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"))}
    if any(held.values()):
        raise OSError(f"capabilities still held after dropping them: {held}")
