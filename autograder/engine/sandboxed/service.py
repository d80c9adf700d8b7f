"""The sandboxed kernel's side of grading: it answers data requests, and decides nothing.

While a notebook is graded, its test cells run in the trusted grader
(`autograder.engine.trusted.testcells`), never here. What the grader needs from the student's
code it asks
for, one request at a time, as data (`autograder.engine.wire`):

- `names`: the notebook's public names; `get`: one of them (data, or a handle);
- `call`, `getattr`, `getitem`, `len`, `list`, `repr`, `bool` on a handle;
- `observe`: run one of the library's registered observations
  (`embeddings_course.observe.REGISTRY`) on handles and data, and send back its data;
- `known_good` / `known_good_end`: while a test of a caller runs, the caller's global name
  of the exercise it calls is bound to a known-good version (the library's, where this
  sandbox has it, else the grader's, reached by callback) and bound back afterwards.

Variables the grader sends are kept as twins between requests (so that a closure or a
layer holding one sees later values) and their values go back after each request. A
function the grader sends is a callback: calling it asks the grader over the stdin
channel, with data, and returns data; its gradient, where the grader sends one, is
attached with `tf.custom_gradient` so that a tape here sees through it.

Everything here can be changed by the notebook, since it runs in the notebook's process:
that is harmless by design, as no test, expected value or verdict is here to reach.
"""

from __future__ import annotations

import importlib
import json
import os

from autograder.engine import wire

RPC = "#course-grade-rpc "
CALLBACK = "#course-grade-callback "


def describe_error(error: BaseException) -> dict:
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a message that cannot be read
        message = "(the error's message could not be read)"
    kind = type(error)
    return {"type": kind.__name__[:200], "module": str(getattr(kind, "__module__", ""))[:200],
            "mro": [c.__name__[:200] for c in kind.__mro__][:40],
            "message": message[:4000]}


class _KernelTable(wire.Table):
    def __init__(self, service):
        self.service = service
        self.twins_used: dict[int, object] = {}

    def reference(self, value):
        for key, twin in self.service.twins.items():
            if value is twin:
                self.twins_used[key] = twin
                return {"t": "ref", "id": key}
        return None

    def handle(self, value):
        return self.service.new_handle(value)

    def resolve(self, node):
        kind, key = node.get("t"), node.get("id")
        if kind == "handle" and key in self.service.handles:
            return self.service.handles[key]
        if kind == "callback" and type(key) is int:
            return self.service.callback(key, bool(node.get("variables")))
        raise wire.WireError("a reference the kernel does not hold")

    def variable(self, array, trainable, name, node):
        import tensorflow as tf

        key = node.get("id")
        twin = self.service.twins.get(key) if type(key) is int else None
        if twin is not None and tuple(twin.shape) == array.shape and \
                twin.dtype.as_numpy_dtype == array.dtype:
            twin.assign(array)
        else:
            twin = tf.Variable(array, trainable=trainable, name=name)
            if type(key) is int:
                self.service.twins[key] = twin
        if type(key) is int:
            self.twins_used[key] = twin
        return twin


class Service:
    """The requests of one kernel. `ask(prompt) -> str` asks the grader (stdin channel)."""

    def __init__(self, namespace: dict, ask):
        self.namespace = namespace
        self.ask = ask
        self.handles: dict[int, object] = {}
        self.twins: dict[int, object] = {}
        self.bound: dict[int, tuple] = {}  # known_good: token -> (globals, name, old)
        self._next = 0

    def new_handle(self, value) -> dict:
        for key, held in self.handles.items():  # noqa: B007 - the key found is used below
            if held is value:
                break
        else:
            self._next += 1
            key = self._next
            self.handles[key] = value
        try:
            text = repr(value)[:300]
        except Exception:  # noqa: BLE001
            text = f"<{type(value).__name__}>"
        kind = type(value)
        return {"t": "handle", "id": key, "type": f"{kind.__module__}.{kind.__qualname__}"[:300],
                "mro": [f"{c.__module__}.{c.__qualname__}"[:300] for c in kind.__mro__][:40],
                "repr": text, "callable": callable(value)}

    # -- callbacks -----------------------------------------------------------------------
    def callback(self, key: int, with_gradient: bool):
        service = self

        def call_grader(*args, **kwargs):
            table = _KernelTable(service)
            request = {"id": key, "args": wire.encode(list(args), table),
                       "kwargs": wire.encode(dict(kwargs), table)}
            answer = json.loads(service.ask(CALLBACK + json.dumps(request)))
            if "error" in answer:
                raise _rebuilt(answer["error"])
            value = wire.decode(answer["ok"], table)
            grads = answer.get("grads") or []
            if not with_gradient or not grads:
                return value
            return _with_gradient(value, [(service.twins.get(k), wire.decode(g, table))
                                          for k, g in grads])

        call_grader.__name__ = call_grader.__qualname__ = f"grader_function_{key}"
        return call_grader

    # -- requests ------------------------------------------------------------------------
    def handle_request(self, text: str) -> dict:
        table = _KernelTable(self)
        try:
            request = json.loads(text)
            result = self._do(request, table)
            node = self._encode(result, table)
        except BaseException as error:  # noqa: BLE001 - every request gets an answer
            if isinstance(error, KeyboardInterrupt):
                return {"error": describe_error(error), "interrupted": True}
            return {"error": describe_error(error)}
        back = {}
        for key, twin in table.twins_used.items():
            try:
                back[str(key)] = wire.encode(_array(twin), wire.Table())
            except Exception:  # noqa: BLE001 - a twin the notebook broke: not sent back
                pass
        return {"ok": node, "vars": back}

    def _encode(self, result, table):
        if isinstance(result, _AsHandle):
            return self.new_handle(result.value)
        if isinstance(result, _Many):
            return {"t": "dict", "k": [wire.encode(k, table) for k in result.values],
                    "v": [self._encode(v, table) for v in result.values.values()]}
        return wire.encode(result, table)

    def _target(self, request, table):
        return wire.decode(request["target"], table)

    def _do(self, request: dict, table):
        op = request.get("op")
        if op == "unbind":  # the test deleted one of the notebook's names
            self.namespace.pop(str(request["name"]), None)
            return None
        if op == "bind":  # the test put one of the notebook's own objects under a name
            self.namespace[str(request["name"])] = wire.decode(request["value"], table)
            return None
        if op == "get":
            name = request["name"]
            if not isinstance(name, str) or name not in self.namespace:
                raise NameError(f"name {name!r} is not defined in the notebook")
            return self._value(self.namespace[name])
        if op == "get_many":
            names = wire.decode(request["names"], table)
            return _Many({n: self._value(self.namespace[n]) for n in names
                          if isinstance(n, str) and n in self.namespace})
        if op == "call":
            target = self._target(request, table)
            args = wire.decode(request["args"], table)
            kwargs = wire.decode(request["kwargs"], table)
            return target(*args, **kwargs)
        if op == "getattr":
            return getattr(self._target(request, table), str(request["name"]))
        if op == "getitem":
            return self._target(request, table)[wire.decode(request["key"], table)]
        if op == "len":
            return len(self._target(request, table))
        if op == "list":
            return list(self._target(request, table))
        if op == "repr":
            return repr(self._target(request, table))
        if op == "bool":
            return bool(self._target(request, table))
        if op == "observe":  # the course's observations (pyproject.toml, via the session)
            module = os.environ.get("COURSE_GRADE_OBSERVATIONS", "")
            registry = importlib.import_module(module).REGISTRY if module else {}
            function = registry.get(str(request["name"]))
            if function is None:
                raise LookupError(f"no observation named {request['name']!r}")
            args = wire.decode(request["args"], table)
            kwargs = wire.decode(request["kwargs"], table)
            return function(*args, **kwargs)
        if op == "known_good":
            return self._known_good(request, table)
        if op == "known_good_end":
            scope, name, old = self.bound.pop(int(request["token"]))
            if old is _MISSING:
                scope.pop(name, None)
            else:
                scope[name] = old
            return None
        raise ValueError(f"unknown request {op!r}")

    def _value(self, value):
        """Small data crosses as data; the rest as a handle."""
        try:
            wire.encode(value, _Small(self))
        except wire.WireError:
            return _AsHandle(value)
        return value

    def _known_good(self, request, table):
        import importlib

        function = self._target(request, table)
        name = str(request["name"])
        inner = getattr(function, "python_function", function)
        while hasattr(inner, "__wrapped__"):
            inner = inner.__wrapped__
        scope = getattr(inner, "__globals__", None)
        if scope is None:
            return None
        replacement = None
        module, _, attribute = str(request.get("library", "")).partition(":")
        try:
            candidate = getattr(importlib.import_module(module), attribute)
            if not getattr(candidate, "__course_withheld__", False):
                replacement = candidate
        except Exception:  # noqa: BLE001 - not in this sandbox: the grader's, by callback
            replacement = None
        if replacement is None:
            replacement = wire.decode(request["callback"], table)
        self._next += 1
        self.bound[self._next] = (scope, name, scope.get(name, _MISSING))
        scope[name] = replacement
        return self._next


_MISSING = object()


class _AsHandle:
    def __init__(self, value):
        self.value = value


class _Many:
    def __init__(self, values: dict):
        self.values = values


class _Small(wire.Table):
    """Encodes only what is small; anything that is not data fails."""

    def __init__(self, service):
        self.service = service
        self.size = 0

    def handle(self, value):
        raise wire.WireError("not data")

    def reference(self, value):
        import numpy as np

        if isinstance(value, np.ndarray):
            self.size += value.nbytes
        elif isinstance(value, (list, tuple, dict, set)):
            self.size += 8 * len(value)
        if self.size > 2**20:
            raise wire.WireError("too big to send whole")
        return None


def _array(variable):
    import numpy as np

    return np.asarray(variable.numpy())


def _rebuilt(error: dict) -> Exception:
    """An exception of the grader's, for a callback that failed there."""
    message = str(error.get("message", ""))[:4000]
    kind = {"ValueError": ValueError, "TypeError": TypeError, "IndexError": IndexError,
            "KeyError": KeyError, "ZeroDivisionError": ZeroDivisionError,
            "NotImplementedError": NotImplementedError}.get(error.get("type"), RuntimeError)
    return kind(message)


def _with_gradient(value, pairs):
    """`value` (a scalar the grader computed) whose gradient with respect to each twin
    variable is the one the grader sent."""
    import tensorflow as tf

    pairs = [(v, g) for v, g in pairs if v is not None and g is not None]
    variables = [v for v, _ in pairs]
    if not pairs:
        return value

    @tf.custom_gradient
    def attach(x):
        # read every variable, so that the tape records this op as using them
        touched = tf.add_n([tf.reduce_sum(tf.zeros_like(tf.cast(v, x.dtype)))
                            for v in variables])

        def grad(upstream, variables=None):
            out = []
            for variable in variables or []:
                match = next((g for v, g in pairs if v is variable), None)
                if match is None:
                    out.append(None)
                elif isinstance(match, tf.IndexedSlices):
                    out.append(tf.IndexedSlices(
                        match.values * tf.cast(upstream, match.values.dtype),
                        match.indices, match.dense_shape))
                else:
                    out.append(tf.cast(upstream, match.dtype) * match)
            return tf.zeros_like(x), out

        return x + touched, grad

    return attach(tf.convert_to_tensor(value))
