"""The trusted side's view of the kernel: `Remote` objects and the `Bridge` that asks.

A test cell that runs in the grader (`autograder.engine.trusted.testcells`) sees each object of the
notebook either as data (a fresh copy: numbers, arrays, tensors, variables, lists...) or
as a `Remote`: calling it, reading an attribute, indexing it, taking its length asks the
kernel (`autograder.engine.sandboxed.service`) and brings back data, or another `Remote`. What
the test
passes in goes as data too; a `tf.Variable` of the test keeps a twin in the kernel, whose
value comes back after each request (so in-place updates are seen, and identity is
kept: a returned twin is the test's own variable); a function of the test becomes a
callback that the kernel can call, with data, and that runs here.

Every answer of the kernel is decoded as data only (`autograder.engine.wire`), within the cell's
deadline, whatever the kernel prints.
"""

from __future__ import annotations

import builtins
import json
import sys
import time
import weakref

import numpy as np

from autograder.engine import wire
from autograder.engine.sandboxed.service import CALLBACK, RPC
from autograder.limits import Limits

DEFAULT_OUTPUT = Limits().max_output_kb * 1024  # bytes a test cell may print


class KernelDied(Exception):
    """The kernel died while answering (the reason is the message)."""


class CellTimeout(Exception):
    """The test cell ran past its time limit."""


class RemoteError(Exception):
    """An exception raised in the notebook's code, of a kind the grader does not name."""


# the kinds of exception that a student's code may raise and a test may expect by name
_BUILTIN = {name: getattr(builtins, name) for name in (
    "ValueError", "TypeError", "IndexError", "KeyError", "AttributeError",
    "ZeroDivisionError", "NotImplementedError", "RuntimeError", "AssertionError",
    "NameError", "ArithmeticError", "OverflowError", "LookupError", "RecursionError",
    "UnboundLocalError", "StopIteration", "MemoryError", "OSError")}


def _tensorflow():
    import tensorflow as tf

    return tf


def rebuild_error(info: dict) -> BaseException:
    """An exception here for one raised in the kernel: the same kind where it is a
    built-in one or one of `tf.errors`, else `RemoteError`; the message as it came."""
    info = info if isinstance(info, dict) else {}
    message = str(info.get("message", ""))[:4000]
    names = [str(n) for n in (info.get("mro") or [])][:40]
    kind = str(info.get("type", "Exception"))[:200]
    from_tensorflow = str(info.get("module", "")).startswith("tensorflow")
    tf = _tensorflow() if from_tensorflow else None
    for name in names:
        cls = getattr(tf.errors, name, None) if tf is not None else None
        if isinstance(cls, type) and issubclass(cls, tf.errors.OpError):
            error = cls(None, None, message)
            return error
        if name in _BUILTIN:
            if name == kind:
                return _BUILTIN[name](message)
            return _BUILTIN[name](f"{kind}: {message}")
    return RemoteError(f"{kind}: {message}")


class Remote:
    """An object of the notebook's kernel, seen from the trusted side."""

    _course_grade_remote = True
    __slots__ = ("_bridge", "_id", "_type", "_mro", "_repr", "__weakref__")

    def __init__(self, bridge: Bridge, node: dict):
        object.__setattr__(self, "_bridge", bridge)
        object.__setattr__(self, "_id", node["id"])
        object.__setattr__(self, "_type", str(node.get("type", ""))[:300])
        object.__setattr__(self, "_mro", tuple(str(m)[:300] for m in node.get("mro", [])[:40]))
        object.__setattr__(self, "_repr", str(node.get("repr", ""))[:300])

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._bridge.request("getattr", target=self, name=name)

    def __setattr__(self, name, value):
        raise AttributeError("a test cannot change the notebook's objects")

    def __call__(self, *args, **kwargs):
        return self._bridge.request("call", target=self, args=list(args), kwargs=dict(kwargs))

    def __getitem__(self, key):
        return self._bridge.request("getitem", target=self, key=key)

    def __len__(self):
        return self._bridge.request("len", target=self)

    def __iter__(self):
        return iter(self._bridge.request("list", target=self))

    def __bool__(self):
        return bool(self._bridge.request("bool", target=self))

    def __repr__(self):
        return self._repr or f"<{self._type}>"

    def is_a(self, cls: type) -> bool:
        """Whether the kernel's object says it is an instance of `cls` (by name)."""
        return f"{cls.__module__}.{cls.__qualname__}" in self._mro


class Registered:
    """A function of the test already registered with the bridge, sent by its number."""

    def __init__(self, key: int):
        self.key = key


def is_remote(value) -> bool:
    return getattr(type(value), "_course_grade_remote", False) is True


class _TrustedTable(wire.Table):
    def __init__(self, bridge: Bridge):
        self.bridge = bridge

    def reference(self, value):
        tf, keras = sys.modules.get("tensorflow"), sys.modules.get("keras")
        if isinstance(value, Registered):
            return {"t": "callback", "id": value.key, "variables": True}
        if is_remote(value):
            if value._bridge is not self.bridge:
                raise wire.WireError("an object of another kernel")
            return {"t": "handle", "id": value._id}
        if tf is not None and isinstance(value, tuple(
                kind for kind in (tf.Variable, getattr(keras, "Variable", None)) if kind)) and \
                not hasattr(value, "_variables"):
            key = self.bridge.mirror(value)
            array = np.asarray(value.numpy())
            return {"t": "var", "id": key, "v": wire._npy(array),
                    "trainable": bool(value.trainable), "name": str(value.name)}
        if isinstance(value, type) and issubclass(value, np.generic):
            return {"t": "dtype", "v": np.dtype(value).name}
        if callable(value) and not isinstance(value, type) and not (
                tf is not None and isinstance(value, tf.DType)):
            return {"t": "callback", "id": self.bridge.register(value), "variables": True}
        return None

    def handle(self, value):
        raise wire.WireError(
            f"a {type(value).__name__} of the test cannot be sent to the notebook: only data, "
            "the notebook's own objects and functions cross")

    def resolve(self, node):
        kind, key = node.get("t"), node.get("id")
        if kind == "handle" and type(key) is int:
            return self.bridge.remote(node)
        if kind == "ref" and type(key) is int:
            variable = self.bridge.mirrored(key)
            if variable is not None:
                return variable
        raise wire.WireError("a reference the grader did not send")


_MISSING = object()


class Bridge:
    """Requests of one test cell's grading to one kernel session, within a deadline."""

    def __init__(self, session, deadline: float, max_output: int = DEFAULT_OUTPUT):
        self.session = session
        self.deadline = deadline
        self.outputs: list = []  # what the notebook's code printed while it was asked
        self.max_output = max_output
        self._printed = 0
        self._callbacks: dict[int, object] = {}
        self._mirrors: dict[int, weakref.ref] = {}
        self._mirror_ids: dict[int, int] = {}
        self._remotes: dict[int, Remote] = {}
        self._next = 0
        self._namespace: dict | None = None  # the test's namespace, once watched
        self._seen: dict[str, object] = {}
        self._syncing = False

    # -- references ----------------------------------------------------------------------
    def _new_id(self) -> int:
        self._next += 1
        return self._next

    def register(self, function) -> int:
        key = self._new_id()
        self._callbacks[key] = function
        return key

    def forget(self, key: int) -> None:
        self._callbacks.pop(key, None)

    def mirror(self, variable) -> int:
        key = self._mirror_ids.get(id(variable))
        if key is not None and self.mirrored(key) is variable:
            return key
        key = self._new_id()
        self._mirrors[key] = weakref.ref(variable)
        self._mirror_ids[id(variable)] = key
        return key

    def mirrored(self, key: int):
        ref = self._mirrors.get(key)
        return ref() if ref is not None else None

    def remote(self, node: dict) -> Remote:
        key = node["id"]
        if key not in self._remotes:
            self._remotes[key] = Remote(self, node)
        return self._remotes[key]

    # -- the notebook's names, as the test changes them ----------------------------------
    def watch(self, namespace: dict, names) -> None:
        """Keep the kernel's `names` in step with what the test does to them in
        `namespace`, as nbgrader's shared namespace would: a name the test deletes is
        deleted in the notebook, and one it binds to one of the notebook's own objects (a
        `Remote`) is bound there to it, before the notebook's code next runs and when the
        test ends. A value the test computes is never bound in the notebook."""
        self._namespace = namespace
        self._seen = {name: namespace.get(name, _MISSING) for name in names}

    def sync(self) -> None:
        if self._namespace is None or self._syncing:
            return
        self._syncing = True
        try:
            for name, seen in self._seen.items():
                now = self._namespace.get(name, _MISSING)
                if now is seen:
                    continue
                if now is _MISSING:
                    self.request("unbind", name=name)
                elif is_remote(now) and now._bridge is self:
                    self.request("bind", name=name, value=now)
                self._seen[name] = now
        finally:
            self._syncing = False

    # -- one request ---------------------------------------------------------------------
    def request(self, op: str, **fields):
        self.sync()  # what the test did to the notebook's names, first
        table = _TrustedTable(self)
        payload = {"op": op}
        for key, value in fields.items():
            payload[key] = value if key in ("name", "token", "library") and \
                isinstance(value, (str, int)) else wire.encode(value, table)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise CellTimeout("the test cell ran past its time limit")
        run = self.session.execute(RPC + json.dumps(payload), remaining,
                                   on_input=self._answer_callback)
        self._keep_outputs(run.outputs)
        if run.status == "died":
            raise KernelDied(run.reason)
        if run.status == "timeout":
            raise CellTimeout("the test cell ran past its time limit (your code was "
                              "interrupted)")
        answer = run.reply.get("course_grade_rpc")
        if not isinstance(answer, dict):
            raise RemoteError("the kernel did not answer the grader's request")
        if "error" in answer:
            if answer.get("interrupted"):  # not the grader's interrupt: the code raised it
                raise RemoteError("KeyboardInterrupt: the notebook's code raised "
                                  "KeyboardInterrupt")
            raise rebuild_error(answer["error"])
        back = answer.get("vars") or {}
        if not isinstance(back, dict):
            raise wire.WireError("a malformed answer")
        for key, node in back.items():
            variable = self.mirrored(int(key)) if str(key).isdigit() else None
            if variable is None:
                continue
            value = wire.decode(node, wire.Table())
            value = np.asarray(value) if isinstance(value, np.generic) else value
            if isinstance(value, np.ndarray) and value.shape == tuple(variable.shape) and \
                    value.dtype == np.dtype(variable.dtype.name if hasattr(
                        variable.dtype, "name") else variable.dtype):
                variable.assign(value)
        return wire.decode(answer.get("ok"), table)

    def _keep_outputs(self, outputs) -> None:
        for out in outputs:
            if out.get("output_type") == "error":
                continue
            size = len(str(out.get("text", out.get("data", ""))))
            if self._printed + size > self.max_output:
                continue
            self._printed += size
            self.outputs.append(out)

    def _answer_callback(self, prompt: str) -> str:
        """Run the test's function that the kernel called back, with its data."""
        tf = sys.modules.get("tensorflow")  # no TensorFlow: no gradient to send back
        if not prompt.startswith(CALLBACK):
            return ""  # the notebook asked for input(): it gets nothing
        try:
            request = json.loads(prompt[len(CALLBACK):])
            function = self._callbacks[int(request["id"])]
            table = _TrustedTable(self)
            args = wire.decode(request["args"], table)
            kwargs = wire.decode(request["kwargs"], table)
            if tf is None:
                return json.dumps({"ok": wire.encode(function(*args, **kwargs), table)})
            with tf.GradientTape(watch_accessed_variables=True) as tape:
                value = function(*args, **kwargs)
            answer = {"ok": wire.encode(value, table)}
            mirrored = [(key, ref()) for key, ref in self._mirrors.items() if ref() is not None]
            watched = {id(v) for v in tape.watched_variables()}
            sources = [(key, v) for key, v in mirrored if id(v) in watched]
            if sources and isinstance(value, tf.Tensor) and value.dtype.is_floating and \
                    value.shape.rank == 0:
                grads = tape.gradient(value, [v for _, v in sources])
                answer["grads"] = [[key, wire.encode(g, wire.Table())]
                                   for (key, _), g in zip(sources, grads, strict=True)
                                   if g is not None]
            return json.dumps(answer)
        except Exception as error:  # noqa: BLE001 - the kernel learns only the kind
            return json.dumps({"error": {"type": type(error).__name__,
                                         "message": "the grader's function raised "
                                                    f"{type(error).__name__}"}})

    def observe(self, name: str, args: tuple, kwargs: dict):
        """Run the library's observation `name` in the kernel, on these arguments."""
        return self.request("observe", name=name, args=list(args), kwargs=dict(kwargs))
