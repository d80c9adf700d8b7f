"""What a kernel can make the grader hold (autograder.engine.trusted.messages, issue 38): every
socket
facing the kernel queues one message, a message for no current cell is dropped unparsed,
every byte a cell sends counts against `Limits.max_received_mb`, and the grader's own
memory is guarded where no queue bounds it (one message of many parts)."""

from __future__ import annotations

import time

import pytest
import zmq
from jupyter_client import KernelManager
from jupyter_client.session import Session

from autograder.engine.trusted import messages, sandbox
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits

MB = 2**20
FLOOD = ("_k = get_ipython().kernel\n_buf = bytes(24 * 2**20)\n_parent = _k.get_parent()\n"
         "_nobody = {'header': _k.session.msg_header('execute_request')}\n")


class _Frames:
    """A socket whose one waiting message is `frames`."""

    def __init__(self, frames):
        self.frames = [zmq.Frame(f) for f in frames] if frames is not None else None

    def recv_multipart(self, flags=0, copy=True):
        frames, self.frames = self.frames, None
        if frames is None:
            raise zmq.Again
        return frames


def _wire(session: Session, parent_id: str, content: bytes, buffers=()) -> list[bytes]:
    header = session.pack(session.msg_header("stream"))
    parent = session.pack({"msg_id": parent_id, "msg_type": "execute_request"})
    parts = [header, parent, b"{}", content]
    return [b"grader", messages.DELIMITER, session.sign(parts), *parts, *buffers]


def test_a_message_for_another_cell_is_counted_and_never_parsed(monkeypatch):
    session = Session(key=b"secret")
    inbox = messages.Inbox(session, "this-cell")
    parsed = []
    monkeypatch.setattr(session, "deserialize", lambda parts: parsed.append(parts))
    other = _wire(session, "another-cell", b"not json at all" * 1000, [b"x" * MB])
    assert inbox.read(_Frames(other), messages.OUTPUTS) is None
    assert not parsed and inbox.received == sum(len(f) for f in other)
    with pytest.raises(zmq.Again):
        inbox.read(_Frames(None), messages.OUTPUTS)


def test_this_cells_message_is_read_signed_and_without_its_buffers():
    session = Session(key=b"secret")
    inbox = messages.Inbox(session, "this-cell")
    ours = _wire(session, "this-cell", session.pack({"name": "stdout", "text": "hi"}),
                 [b"x" * MB])
    msg = inbox.read(_Frames(ours), messages.OUTPUTS)
    assert msg["content"] == {"name": "stdout", "text": "hi"} and msg["buffers"] == []
    assert inbox.read(_Frames(ours), messages.OUTPUTS) is None  # the same signature again
    forged = ours[:2] + [b"0" * 64] + ours[3:]
    assert inbox.read(_Frames(forged), messages.OUTPUTS) is None
    assert inbox.read(_Frames(ours), ("execute_reply",)) is None  # a kind not asked for


@pytest.fixture(scope="module")
def use_sandbox():
    return sandbox.available()[0]


@pytest.mark.slow
def test_every_socket_facing_the_kernel_queues_one_message(use_sandbox, tmp_path):
    session = KernelSession(Limits(cell_timeout=20), use_sandbox=use_sandbox)
    session.start()
    try:
        kc = session.kc
        sockets = {name: getattr(kc, f"{name}_channel").socket
                   for name in ("shell", "iopub", "stdin", "control")}
        for _ in range(50):  # the heartbeat makes its socket in its own thread
            if kc.hb_channel.socket is not None:
                break
            time.sleep(0.1)
        sockets["hb"] = kc.hb_channel.socket
        # a cold kernel's manager (autograder.engine.trusted.session._start_cold) has its own,
        # made as the kernel starts: made again, bounded, with its client's
        manager = KernelManager(transport="ipc", ip=str(tmp_path / "k"))
        manager._connect_control_socket()
        client = manager.client()
        messages.limit_sockets(client)
        sockets["manager"] = manager._control_socket
        for name, sock in sockets.items():
            assert sock.getsockopt(zmq.RCVHWM) == messages.RECEIVE_QUEUE, name
            largest = messages.MAX_MESSAGE if name in ("shell", "iopub", "stdin") else \
                messages.SMALL_MESSAGE
            assert sock.getsockopt(zmq.MAXMSGSIZE) == largest, name
        manager._close_control_socket()
        manager.context.destroy()
        client.context.destroy()
    finally:
        session.stop()


@pytest.mark.slow
def test_a_cell_that_floods_is_stopped_and_says_so(use_sandbox):
    """The same 24 MB buffer sent 200 times, signed afresh each time, for this cell (4.8
    GB): stopped once it sent `max_received_mb`, and the grader's memory hardly moves."""
    session = KernelSession(Limits(cell_timeout=30), use_sandbox=use_sandbox)
    session.start()
    try:
        before = messages.grader_bytes()
        run = session.run(FLOOD + "for _ in range(200):\n"
                          "    _k.session.send(_k.iopub_socket, 'display_data', {'data': {},\n"
                          "                    'metadata': {}}, parent=_parent, buffers=[_buf])")
        assert run.status == "died" and "more than 64 MB of output" in run.reason, run.reason
        assert "the cell sent more than 64 MB of output; stopped" in run.outputs[-1]["text"]
        assert session.guard.peak < 200 * MB
        assert messages.grader_bytes() - before < 200 * MB
    finally:
        session.stop()


@pytest.mark.slow
def test_one_message_of_many_parts_is_stopped_by_the_graders_memory_guard(use_sandbox):
    """No queue bounds one message's parts (ZeroMQ keeps them all until its last): the
    guard stops the kernel once the grader's memory grew by `grader_memory_mb`."""
    session = KernelSession(Limits(cell_timeout=60, grader_memory_mb=128),
                            use_sandbox=use_sandbox)
    session.start()
    try:
        run = session.run(FLOOD + "_k.session.send(_k.iopub_socket, 'display_data', {'data': "
                          "{}, 'metadata': {}},\n                parent=_parent, "
                          "buffers=[_buf] * 60)")
        assert run.status == "died" and "grader's memory grew by more than 128 MB" in \
            run.reason, run.reason
        assert session.guard.peak < 256 * MB
    finally:
        session.stop()
