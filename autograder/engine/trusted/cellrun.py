"""One cell run in a kernel session: the wall-clock deadline, the output cap, the kernel's
input requests, and how the cell ended (`CellRun`).

`execute` sends a cell to an `autograder.engine.trusted.session.KernelSession` and reads what the
kernel says back: the deadline holds however much or little the cell prints (an interrupt
first, then the kernel is stopped), output past the cap is dropped with a line that says
so, and a kernel that died, broke its connection or passed a limit ends the cell as
"died" with the reason. Every byte the kernel sends while the cell runs is counted
(messages for other cells too, read through a `messages.Inbox`, which parses only this
cell's): past `Limits.max_received_mb` the kernel is stopped and the cell's output says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import nbformat
import zmq

from autograder.engine.trusted import messages

if TYPE_CHECKING:
    from autograder.engine.trusted.session import KernelSession

INTERRUPT_GRACE = 5  # seconds a cell has to stop once interrupted, before the kernel is killed


@dataclass
class CellRun:
    outputs: list = field(default_factory=list)
    status: str = "ok"  # ok, error, timeout, died
    reply: dict = field(default_factory=dict)
    truncated: bool = False
    reason: str = ""  # why the kernel died
    hidden: bool = False  # a test cell (run by the grader) that failed in a hidden block


def execute(session: KernelSession, code: str, timeout: float, on_input=None) -> CellRun:
    """Send `code` to the kernel and wait, at most `timeout` seconds whatever it
    prints, for it to finish. `on_input(prompt) -> str` answers the kernel's input
    requests (the grader's callbacks); without it the kernel gets none."""
    result = CellRun()
    try:
        msg_id = session.kc.execute(code, store_history=on_input is None,
                                    allow_stdin=on_input is not None, stop_on_error=False)
    except zmq.ZMQError:
        return _broken(session, result)
    deadline = time.monotonic() + timeout
    interrupted_at = None
    cap = session.limits.max_output_kb * 1024
    used = 0
    inbox = messages.Inbox(session.kc.session, msg_id)  # every byte the kernel sends, counted
    flood = session.limits.max_received_mb * 2**20
    messages.MemoryGuard.of(session)  # the grader's own memory counts from here
    idle = False
    iopub, stdin = session.kc.iopub_channel.socket, session.kc.stdin_channel.socket
    poller = zmq.Poller()
    poller.register(iopub, zmq.POLLIN)
    if on_input is not None:
        poller.register(stdin, zmq.POLLIN)
    while not idle:
        now = time.monotonic()
        # the deadline holds however much or little the cell prints
        if interrupted_at is None and now > deadline:
            interrupted_at = now
            session.interrupt()
        elif interrupted_at is not None and now > interrupted_at + INTERRUPT_GRACE:
            session.kill_tree()
            result.status = "died"
            result.reason = (f"the cell ran past the {timeout:g} s limit and did not "
                             "stop when interrupted; the kernel was stopped")
            return result
        # one wait for either socket: a callback's input request is answered at once
        ready = dict(poller.poll(50))
        if on_input is not None and stdin in ready:
            try:
                _answer_input(session, inbox, on_input, flood)
            except zmq.ZMQError:
                return _broken(session, result)
            if inbox.received > flood:
                return _flooded(session, result)
            continue
        try:
            if iopub not in ready:
                raise zmq.Again
            msg = inbox.read(iopub, messages.OUTPUTS)
        except zmq.Again:
            if not session.alive():
                result.status = "died"
                result.reason = session.killed_for or (
                    "the kernel died (os._exit, a crash, or the process was killed)")
                return result
            continue
        if inbox.received > flood:
            return _flooded(session, result)
        # None: not this cell's (never parsed), or malformed
        out = messages.output(msg, msg_id) if msg is not None else None
        if out == "idle":
            idle = True
            continue
        if out == "clear":
            result.outputs = []
            continue
        if out is None:
            continue
        kind = out["output_type"]
        used += messages.output_size(out)
        if used > cap:
            if not result.truncated:
                result.truncated = True
                result.outputs.append(nbformat.v4.new_output(
                    "stream", name="stdout",
                    text=f"\n[course-grade: output beyond {session.limits.max_output_kb} kB "
                         "dropped]\n"))
            if kind != "error":
                continue
        if kind == "stream" and result.outputs and \
                result.outputs[-1].get("output_type") == "stream" and \
                result.outputs[-1].get("name") == out.get("name"):
            result.outputs[-1]["text"] += out["text"]
        else:
            result.outputs.append(out)
    result.reply = _reply(session, inbox, flood)
    if inbox.received > flood:
        return _flooded(session, result)
    if inbox.received > messages.MAX_MESSAGE:
        messages.give_back_memory()  # what the cell's messages took, freed
    # what the cell left behind is the cell's doing (the grader's guard may have stopped it)
    reason = session.over_limits() or session.killed_for
    if reason:
        session.stop_for(reason)
        result.status, result.reason = "died", reason
    elif interrupted_at is not None:
        result.status = "timeout"
    elif result.reply.get("status") == "error" or any(
            o.get("output_type") == "error" for o in result.outputs):
        result.status = "error"
    return result


def _broken(session: KernelSession, result: CellRun) -> CellRun:
    """The kernel's connection cannot take a message (it sent one over the size limit,
    which ends the connection): the kernel is stopped, as if it had died."""
    session.kill_tree()
    result.status = "died"
    result.reason = ("the kernel's connection to the grader broke (a message over "
                     f"{messages.MAX_MESSAGE >> 20} MB?) and the kernel was stopped")
    return result


def _flooded(session: KernelSession, result: CellRun) -> CellRun:
    """The kernel sent more than the cell may (`Limits.max_received_mb`): it is stopped,
    and the cell's output says why."""
    megabytes = session.limits.max_received_mb
    session.stop_for(f"the cell sent more than {megabytes} MB of output (every message to "
                     "the grader counted) and was stopped")
    result.outputs.append(nbformat.v4.new_output(
        "stream", name="stdout",
        text=f"\n[course-grade: the cell sent more than {megabytes} MB of output; stopped]\n"))
    result.status, result.reason = "died", session.killed_for
    messages.give_back_memory()
    return result


def _reply(session: KernelSession, inbox: messages.Inbox, flood: int) -> dict:
    """The execute reply of the inbox's cell (waiting at most 10 s for it), {} when none
    came, the kernel shaped it wrongly, or the kernel sent more than `flood` bytes."""
    deadline = time.monotonic() + 10
    shell = session.kc.shell_channel.socket
    while inbox.received <= flood:
        left = deadline - time.monotonic()
        if left <= 0 or not shell.poll(max(10, int(left * 1000))):
            return {}
        try:
            reply = inbox.read(shell, ("execute_reply",))
        except zmq.Again:
            continue
        if reply is not None:
            content = reply.get("content")
            return content if isinstance(content, dict) else {}
    return {}


def _answer_input(session: KernelSession, inbox: messages.Inbox, on_input,
                  flood: int) -> None:
    stdin = session.kc.stdin_channel.socket
    while inbox.received <= flood:
        try:
            msg = inbox.read(stdin, ("input_request",))
        except zmq.Again:
            return
        content = msg.get("content") if msg is not None else None
        if isinstance(content, dict):
            session.kc.input(on_input(str(content.get("prompt", ""))))
