"""What the grader accepts from a kernel: one iopub message read as a cell's output, its
size counted against the cell's output limit, and a ceiling on any one message's bytes.

A kernel is untrusted: a message it shaped wrongly is dropped, not raised, and an error
output's fields are cut to a readable length before they reach a report.
"""

from __future__ import annotations

import types

import nbformat
import zmq
from jupyter_client.connect import channel_socket_types

MAX_MESSAGE = 32 * 2**20  # bytes of one message from the kernel


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


def limit_size(client, limit: int) -> None:
    """Messages from the kernel above `limit` bytes end the connection (ZMQ_MAXMSGSIZE,
    set before the socket connects), so that a kernel cannot fill the grader's memory
    with one reply."""
    def limited(self, channel, identity=None):
        sock = self.context.socket(channel_socket_types[channel])
        sock.linger = 1000
        sock.setsockopt(zmq.MAXMSGSIZE, limit)
        sock.setsockopt(zmq.SNDTIMEO, 10_000)  # a send to a dropped kernel fails, not hangs
        if identity:
            sock.identity = identity
        sock.connect(self._make_url(channel))
        return sock

    client._create_connected_socket = types.MethodType(limited, client)
