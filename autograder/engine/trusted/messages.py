"""What the grader accepts from a kernel: one iopub message read as a cell's output, its
size counted against the cell's output limit, a ceiling on any one message's bytes, and
a bound on what the kernel can make the grader's memory hold.

A kernel is untrusted: a message it shaped wrongly is dropped, not raised, and an error
output's fields are cut to a readable length before they reach a report.

Every byte the kernel can make the grader hold is bounded: each socket that faces the
kernel queues at most `RECEIVE_QUEUE` whole messages (ZMQ_RCVHWM; past it ZeroMQ stops
reading and the kernel's side holds them), of at most `MAX_MESSAGE` bytes a part
(`SMALL_MESSAGE` where no data travels: control, heartbeat); an `Inbox` counts every byte
a cell's messages take, whichever cell they name, and parses only the header frames of a
message for another cell (or none), never its content or buffers; and a `MemoryGuard`
stops the kernel when the grader's own memory grows past `Limits.grader_memory_mb` while
one cell runs (what no queue bounds: one message of many parts).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
import types

import nbformat
import psutil
import zmq
from jupyter_client import KernelManager
from jupyter_client.connect import channel_socket_types

MAX_MESSAGE = 32 * 2**20  # bytes of one message part from the kernel (shell, stdin, iopub)
SMALL_MESSAGE = 64 * 2**10  # bytes of one part on a socket that carries no data
RECEIVE_QUEUE = 1  # whole messages ZeroMQ may hold for the grader on one socket (RCVHWM)
RECEIVE_BUFFER = 256 * 2**10  # bytes of the system's receive buffer of one socket (RCVBUF)
MAX_HEADER = 64 * 2**10  # bytes of a header frame the grader parses to find its cell
DELIMITER = b"<IDS|MSG>"  # between a message's routing frames and its own (Jupyter's wire)
OUTPUTS = ("status", "clear_output", "stream", "display_data", "execute_result", "error")
GUARD_INTERVAL = 0.01  # seconds between two looks at the grader's own memory


def output_size(out) -> int:
    """Characters one output adds to its cell's output limit."""
    if out.get("output_type") == "stream":
        return len(out.get("text", ""))
    return len(str(out.get("data", ""))) + len(str(out.get("traceback", "")))


def output(msg, msg_id: str):
    """What an iopub message means for the cell `msg_id`: "idle", "clear", an output, or
    None (another cell's, another kind, or a message the kernel shaped wrongly)."""
    try:
        parent = msg.get("parent_header")
        if not isinstance(parent, dict) or parent.get("msg_id") != msg_id:
            return None
        kind, content = msg.get("msg_type"), msg.get("content")
        if not isinstance(content, dict):
            return None
        if kind == "status":
            return "idle" if content.get("execution_state") == "idle" else None
        if kind == "clear_output":
            return "clear"
        if kind not in ("stream", "display_data", "execute_result", "error"):
            return None
        if kind == "stream" and not (isinstance(content.get("text"), str) and
                                     content.get("name") in ("stdout", "stderr")):
            return None
        if kind == "error":
            content["ename"] = str(content.get("ename", ""))[:200]
            content["evalue"] = str(content.get("evalue", ""))[:4000]
            content["traceback"] = [str(t)[:4000] for t in content.get("traceback", [])
                                    if isinstance(t, str)][:50] \
                if isinstance(content.get("traceback"), list) else []
        if kind in ("display_data", "execute_result") and \
                not isinstance(content.get("data"), dict):
            return None
        return nbformat.v4.output_from_msg(msg)
    except Exception:  # noqa: BLE001 - a message the grader cannot read is dropped
        return None


def _bound(sock_or_context, largest: int) -> None:
    sock_or_context.setsockopt(zmq.MAXMSGSIZE, largest)
    sock_or_context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
    sock_or_context.setsockopt(zmq.RCVBUF, RECEIVE_BUFFER)


def limit_context(context) -> None:
    """Every socket `context` makes from now on (a manager's control socket, a client's
    heartbeat) takes parts of at most `SMALL_MESSAGE` bytes and queues one message."""
    _bound(context, SMALL_MESSAGE)


def limit_sockets(client) -> None:
    """Bound what the kernel can make the grader hold on each socket of `client` (set
    before the sockets connect), and on the control socket of the manager that started
    it (a cold kernel's: made again, bounded): a message part above the socket's ceiling
    ends the connection (ZMQ_MAXMSGSIZE), and one whole message at most waits to be read."""
    limit_context(client.context)  # the heartbeat's socket, made in its own thread
    manager = getattr(client, "parent", None)
    if isinstance(manager, KernelManager) and manager._control_socket is not None:
        limit_context(manager.context)
        manager._close_control_socket()
        manager._connect_control_socket()

    def limited(self, channel, identity=None):
        sock = self.context.socket(channel_socket_types[channel])
        sock.linger = 1000
        _bound(sock, SMALL_MESSAGE if channel == "control" else MAX_MESSAGE)
        sock.setsockopt(zmq.SNDTIMEO, 10_000)  # a send to a dropped kernel fails, not hangs
        if identity:
            sock.identity = identity
        sock.connect(self._make_url(channel))
        return sock

    client._create_connected_socket = types.MethodType(limited, client)


class Inbox:
    """What the grader reads from a kernel while one cell (`msg_id`) runs. Every message's
    bytes are counted in `received`, whichever cell it names; only a message of this
    cell, of a kind asked for, has its signature checked and its content parsed. Another
    cell's message (or one for none) costs the grader its parent header frame (at most
    `MAX_HEADER` bytes): its content and buffers are never read."""

    def __init__(self, session, msg_id: str):
        self.session, self.msg_id, self.received = session, msg_id, 0
        self._needle = msg_id.encode()

    def read(self, sock, kinds) -> dict | None:
        """The message waiting on `sock` (zmq.Again when none) if it is this cell's and
        one of `kinds`, as jupyter_client's Session reads it (buffers left out); else None."""
        frames = sock.recv_multipart(zmq.NOBLOCK, copy=False)
        self.received += sum(len(frame) for frame in frames)
        try:
            return self._parse(frames, kinds)
        except Exception:  # noqa: BLE001 - a message the grader cannot read is dropped
            return None

    def _parse(self, frames, kinds) -> dict | None:
        at = next((i for i, f in enumerate(frames)
                   if len(f) == len(DELIMITER) and f.bytes == DELIMITER), None)
        parts = frames[at + 1:at + 6] if at is not None else []
        if len(parts) < 5 or len(parts[1]) > MAX_HEADER or len(parts[2]) > MAX_HEADER:
            return None
        parent_frame = parts[2].bytes
        if self._needle not in parent_frame:  # another cell's, or none: not parsed
            return None
        parent, header = self.session.unpack(parent_frame), self.session.unpack(parts[1].bytes)
        if not isinstance(parent, dict) or parent.get("msg_id") != self.msg_id or \
                not isinstance(header, dict) or header.get("msg_type") not in kinds:
            return None
        return self.session.deserialize([part.bytes for part in parts])  # signature checked


def grader_bytes() -> int:
    """This process's anonymous resident memory (RssAnon: what ZeroMQ's queues and Python's
    objects take; not the shared libraries mapped from files), else its whole RSS."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return psutil.Process().memory_info().rss


_LIBC = ctypes.util.find_library("c")


def give_back_memory() -> None:
    """Memory freed by this process returned to the system where the C library can
    (glibc's malloc_trim): what a flood left behind stops counting against the grader."""
    try:
        ctypes.CDLL(_LIBC).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


class MemoryGuard:
    """The grader's own memory (`grader_bytes`) while it talks to one kernel, looked at
    every `GUARD_INTERVAL` s from the first cell of a session's kernel for as long as the
    session has that kernel's client: once it has grown by more than
    `Limits.grader_memory_mb` since the kernel's current cell started (`rebase`), the
    session stops the kernel (`stop_for`: ZeroMQ then drops what it held of the kernel's
    messages), once, and what was freed is given back to the system."""

    def __init__(self, session):
        self.session, self.client = session, session.kc
        self.megabytes = session.limits.grader_memory_mb
        self.baseline = grader_bytes()
        self.peak = 0  # the most it grew, in bytes
        self._done = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="grader-memory-guard").start()

    @classmethod
    def of(cls, session) -> MemoryGuard:
        """The guard of `session`'s kernel (`session.guard`, started at its first cell),
        counting from now."""
        guard = getattr(session, "guard", None)
        if guard is None or guard.client is not session.kc or guard._done.is_set():
            guard = session.guard = cls(session)
        guard.rebase()
        return guard

    def rebase(self) -> None:
        self.baseline = grader_bytes()

    def _run(self) -> None:
        while not self._done.wait(GUARD_INTERVAL):
            if self.session.kc is not self.client:  # stopped, or another kernel now
                self._done.set()
                return
            grown = grader_bytes() - self.baseline
            self.peak = max(self.peak, grown)
            if grown > self.megabytes * 2**20:
                self._done.set()
                self.session.stop_for(
                    f"the grader's memory grew by more than {self.megabytes} MB while it read "
                    "the kernel's messages; the kernel was stopped")
                time.sleep(0.2)  # ZeroMQ drops the messages of the closed connection
                give_back_memory()
                return
