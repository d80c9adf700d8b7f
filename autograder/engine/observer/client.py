"""The grader's side of the observer: its process started, asked, watched and replaced.

One `Observer` per grading process (`shared()`), started at its first request: the
observer's process (`autograder.engine.observer.serve`) in a sandbox like a cold kernel's
(bubblewrap, `autograder.engine.trusted.sandbox`; a plain process where none can be had),
with 64 MB of scratch space. Each request has a deadline (the test's); the process is
watched while it answers: past the deadline, or once its resident memory passes
`memory_mb`, or when it dies, it is killed, the request fails with `ObserverFailed` saying
which, and the next request starts a fresh process. An error the graph raised comes back as
its `tf.errors` kind (an `InvalidArgumentError` for a tag id out of range), any other as
`ObserverFailed`.
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
import time
from pathlib import Path

from autograder.engine import wire
from autograder.engine.observer import serve

START_SECONDS = 120.0
MEMORY_MB = 2048  # resident memory of the observer's process, TensorFlow included
POLL_SECONDS = 0.05


class ObserverFailed(RuntimeError):
    """The observer could not answer: what happened, in one sentence."""


def _resident_mb(pid: int) -> float:
    """Resident memory of `pid` and its children, in MB (0 where it is gone)."""
    total = 0
    for task in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{task}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _children(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        task = queue.pop()
        try:
            with open(f"/proc/{task}/task/{task}/children") as text:
                kids = [int(k) for k in text.read().split()]
        except OSError:
            kids = []
        found += kids
        queue += kids
    return found


class Observer:
    """One observer process (started when first asked), and the requests sent to it."""

    def __init__(self, memory_mb: int = MEMORY_MB):
        self.memory_mb = memory_mb
        self.process: subprocess.Popen | None = None
        self.folder: Path | None = None
        self.lock = threading.Lock()
        self.start_seconds = 0.0  # spent starting processes, all together

    def _command(self) -> list[str]:
        from autograder.engine.trusted import sandbox

        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
               "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONNOUSERSITE": "1", "CUDA_VISIBLE_DEVICES": "",
               "COURSE_GRADE_OBSERVER_MB": str(max(self.memory_mb - 768, 256))}
        python = [sys.executable, "-m", "autograder.engine.observer.serve"]
        if sandbox.available()[0]:
            self.folder = Path(tempfile.mkdtemp(prefix="cg-observer-"))
            os.chmod(self.folder, 0o700)
            env.update(HOME=sandbox.HOME)
            return [*sandbox.command(self.folder, env, 64), *python]
        return python

    def start(self) -> None:
        command = self._command()
        env = None if command[0] != sys.executable else {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
            "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
            "COURSE_GRADE_OBSERVER_MB": str(max(self.memory_mb - 768, 256)),
            "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        cwd="/", env=env, start_new_session=True)
        line = self._read(time.monotonic() + START_SECONDS, len(serve.READY))
        if line != serve.READY:
            self.stop()
            raise ObserverFailed(f"the observer did not start ({line[:80]!r})")

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _read(self, deadline: float, size: int) -> bytes:
        """`size` bytes of the process's stdout, watching it while they come."""
        got = b""
        fd = self.process.stdout.fileno()
        while len(got) < size:
            if time.monotonic() > deadline:
                self.stop()
                raise ObserverFailed("the observer ran past the test's deadline, and was "
                                     "stopped (a graph that loops or runs too long?)")
            if _resident_mb(self.process.pid) > self.memory_mb:
                self.stop()
                raise ObserverFailed(f"the graph took more than {self.memory_mb} MB of "
                                     "memory in the observer, which was stopped")
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if not ready:
                continue
            chunk = os.read(fd, size - len(got))
            if not chunk:
                self.stop()
                raise ObserverFailed("the observer died while it ran the graph")
            got += chunk
        return got

    def ask(self, message: dict, deadline: float):
        """Send `message` (see `serve`), wait for its answer until `deadline` (a
        `time.monotonic()` value)."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.stop()
                started = time.monotonic()
                self.start()
                self.start_seconds += time.monotonic() - started
                deadline += time.monotonic() - started  # its start is not the graph's time
            body = json.dumps(wire.encode(message, wire.Table())).encode()
            try:
                self.process.stdin.write(len(body).to_bytes(4, "big") + body)
                self.process.stdin.flush()
            except OSError:
                self.stop()
                raise ObserverFailed("the observer died before it read the graph") from None
            size = int.from_bytes(self._read(deadline, 4), "big")
            if size > serve.MAX_FRAME:
                self.stop()
                raise ObserverFailed("the observer's answer is too big")
            answer = json.loads(self._read(deadline, size))
        if "error" in answer:
            raise _error(answer["error"])
        return wire.decode(answer["ok"], wire.Table())

    def run(self, request: dict, deadline: float):
        """`graphs.run(request)` in the observer, within `deadline`."""
        remaining = max(deadline - time.monotonic(), 0.1)
        return self.ask({"op": "run", "request": request, "timeout_s": remaining}, deadline)

    def op_types(self, graph, deadline: float) -> list[str]:
        """The op types of `graph` (GraphDef bytes as a uint8 array), once checked."""
        return self.ask({"op": "op_types", "graph": graph}, deadline)


def _error(error: dict) -> Exception:
    kind, message = str(error.get("type", "")), str(error.get("message", ""))
    if kind in ("Refused", "Unusable"):
        return ObserverFailed(f"the observer refused the graph: {message}")
    import tensorflow as tf

    known = getattr(tf.errors, kind, None)
    if isinstance(known, type) and issubclass(known, tf.errors.OpError) and \
            known is not tf.errors.OpError:
        return known(None, None, message)
    return ObserverFailed(f"the observer could not run the graph: {kind}: {message}")


_SHARED: list = []


def shared() -> Observer:
    """This process's observer (started at its first request, stopped at exit)."""
    if not _SHARED:
        _SHARED.append(Observer())
        atexit.register(_SHARED[0].stop)
    return _SHARED[0]
