"""A test cell, run where the student's code never runs: in the grader's own process.

`run_test` runs the full source of a test cell (hidden tests included, as the gradebook
holds it) in a fresh namespace of the grader: the release's imports bound to the real
modules, and the names the release's own cells define taken from the notebook's kernel, as data
or as an `autograder.engine.trusted.remote.Remote`. Observations of remote objects are sent to
the kernel
(the course's `observations` module, `embeddings_course.observe` here), and so are
`known_good` blocks (`embeddings_course.mirrors`). The verdict is whether the cell
raised, here: nothing the kernel sends is run, unpickled or trusted as a verdict.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import threading
import time
from dataclasses import dataclass, field

import nbformat

from autograder import cells, course
from autograder.cells import HIDDEN_MARKERS
from autograder.engine.trusted import seeds
from autograder.engine.trusted.remote import (
    DEFAULT_OUTPUT,
    Bridge,
    CellTimeout,
    KernelDied,
    Registered,
)

MESSAGE_LIMIT = 1500  # characters of a failing test's message kept for the student
_WARMING: dict[str, threading.Thread] = {}


def warm_imports(imports: str) -> None:
    """Start running the release's `imports` in this process, in the background, while the
    kernel starts: the first test then finds its modules loaded (importing TensorFlow takes
    seconds). Once per process; a failure here is left for the test to meet and report."""
    if imports and imports not in _WARMING:
        thread = threading.Thread(target=_import_quietly, args=(imports,), daemon=True,
                                  name="warm-imports")
        _WARMING[imports] = thread
        thread.start()


def _import_quietly(imports: str) -> None:
    try:
        exec(compile(imports, "<the release's imports>", "exec"), {})  # noqa: S102
    except BaseException:  # noqa: BLE001, S110 - the test's own import says what is wrong
        pass


@dataclass
class TestRun:
    status: str = "ok"  # ok, error, timeout, died
    ename: str = ""
    evalue: str = ""
    outputs: list = field(default_factory=list)
    reason: str = ""  # why the kernel died
    hidden: bool = False  # it failed inside a hidden block: Validate passed this cell


class _Router:
    """What the library's observations and `known_good` ask of the grader."""

    def __init__(self, bridge: Bridge):
        self.bridge = bridge

    def observe(self, name, args, kwargs):
        return self.bridge.observe(name, args, kwargs)

    def observer_run(self, request: dict) -> dict:
        """A graph the kernel exported, run by the observer within the test's deadline
        (autograder.engine.observer); the time the observer's process took to start, if
        it had to, is not the test's."""
        return self._observer(lambda observer: observer.run(request, self.bridge.deadline))

    def observer_op_types(self, graph) -> list[str]:
        """The op types of a graph the kernel exported, read by the observer."""
        return self._observer(lambda observer: observer.op_types(graph, self.bridge.deadline))

    def observer_ask(self, message: dict):
        """Any other request of the observer (`autograder.engine.observer.serve`: a Keras
        layer's facts, notebook 04's training op), within the test's deadline likewise."""
        return self._observer(lambda observer: observer.ask(message, self.bridge.deadline))

    def _observer(self, ask):
        from autograder.engine.observer import client

        observer = client.shared()
        before = observer.start_seconds
        try:
            return ask(observer)
        finally:
            self.bridge.deadline += observer.start_seconds - before

    @contextlib.contextmanager
    def known_good(self, function, name: str, library: str):
        module, _, attribute = library.partition(":")
        implementation = getattr(importlib.import_module(module), attribute)
        key = self.bridge.register(implementation)
        token = self.bridge.request("known_good", target=function, name=name, library=library,
                                    callback=Registered(key))
        try:
            yield
        finally:
            self.bridge.forget(key)
            if token is not None:
                self.bridge.request("known_good_end", token=token)


def _routed(bridge: Bridge):
    """The course's observations (pyproject.toml) sent to the kernel while a test runs;
    nothing to route for a course without them."""
    module = course.facts().observations
    if not module:
        return contextlib.nullcontext()
    return importlib.import_module(module).routed(_Router(bridge))


def _cap(text: str, limit: int = MESSAGE_LIMIT) -> str:
    if len(text) > limit:
        return text[:limit].rstrip() + f" [cut by the grader at {limit} characters]"
    return text


def run_test(session, source: str, imports: str, timeout: float,
             max_output: int = DEFAULT_OUTPUT, names=(), secret: str = "") -> TestRun:
    """Run one test cell's `source` here, with the release's `imports`, and `names` (those
    the release's own cells define) taken from `session`'s kernel; its hidden tests draw
    their inputs from the run's `secret` (autograder.engine.trusted.seeds; none: the
    literals); the outcome, with what the notebook's code and the test printed."""
    bridge = Bridge(session, time.monotonic() + timeout, max_output)
    result = TestRun()
    printed = io.StringIO()
    namespace = {"__builtins__": builtins, "__name__": "__course_test__"}
    try:
        tree = cells.parse(source)
        exec(compile(imports, "<the release's imports>", "exec"), namespace)  # noqa: S102
        # the same names for every test, from the release: the kernel learns nothing of
        # the test from them
        wanted = [n for n in names if n not in namespace]
        if wanted:
            namespace.update(bridge.request("get_many", names=wanted))
            bridge.watch(namespace, wanted)
        with cells.PARSE_LOCK:  # compiling an ast.Module reads it with the same counter
            code = compile(tree, "<test cell>", "exec")
        with _routed(bridge), seeds.installed(secret), contextlib.redirect_stdout(printed):
            try:
                exec(code, namespace)  # noqa: S102 - the course's own test, never the student's
            finally:
                bridge.sync()  # the notebook's names as the test left them
    except KernelDied as error:
        result.status, result.reason = "died", str(error)
        result.ename, result.evalue = "KernelDied", str(error)
    except CellTimeout as error:
        result.status, result.ename, result.evalue = "timeout", "CellTimeout", str(error)
    except BaseException as error:  # noqa: BLE001 - any failure of the test is its verdict
        result.status, result.ename = "error", type(error).__name__
        result.evalue = _cap(_message(error))
        result.hidden = _failed_line(error) in hidden_lines(source)
    result.outputs = list(bridge.outputs)
    text = printed.getvalue()
    if text:
        result.outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                     text=_cap(text, 20_000)))
    return result


def hidden_lines(source: str) -> set[int]:
    """The line numbers (from 1) of `source` inside its hidden blocks, markers included."""
    begin, end = HIDDEN_MARKERS
    lines, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith(begin):
            inside = True
        if inside:
            lines.add(number)
        if line.strip().startswith(end):
            inside = False
    return lines


def _failed_line(error: BaseException) -> int | None:
    """The line of the test cell's top-level statement that was running when `error`
    was raised (a helper the cell defines counts where it is called)."""
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_filename == "<test cell>":
            return frame.tb_lineno
        frame = frame.tb_next
    return None


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001
        return "(the message could not be read)"
