"""Which library function mirrors which exercise; tests that an answer does not call it,
and tests of a caller with the library's known-good version of its callee.

Later notebooks need the earlier exercises' results, so the library keeps its own version
of many of them (`sparse.deduplicate` is notebook 02's `deduplicate`). A graded answer that
only calls that version has not done the exercise. `with own_work(exercise, answer):` runs
a test's block while the code of every library version of that exercise is swapped for a
tripwire. A call that comes from the answer's code (an alias, an import inside the
function, a helper it calls, a method of a subclass) is recorded and fails the test with a
message that names the library version; a call from the test itself (a reference result)
runs the library's code as usual. It also fails where the answer is, subclasses or names
a library version or a function built from its code object.

What it does not stop: the same lines typed out again, which is the exercise done.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import types
import warnings

from sparse_embeddings.checks import CheckFailed

# exercise grade id -> the library objects that do the same job ("module:attribute");
# read-only, so that a notebook cannot point a test's tripwires elsewhere
MIRRORS: types.MappingProxyType = types.MappingProxyType({
    "rows_changed": ("sparse_embeddings.checks:rows_changed",),
    "deduplicate": ("sparse_embeddings.sparse:deduplicate",),
    "sparse_sgd_update": ("sparse_embeddings.sparse:sparse_sgd_update",),
    "lazy_adam_update": ("sparse_embeddings.sparse:lazy_adam_update",
                         "sparse_embeddings.optimizers:LazyAdam"),
    "PartiallyFrozenEmbedding": ("sparse_embeddings.layers:PartiallyFrozenEmbedding",),
    "normalize_token": ("sparse_embeddings.ner:normalize_token",
                        "sparse_embeddings.ner:normalize_sentence"),
    "build_vocab": ("sparse_embeddings.ner:build_vocab",),
    "encode_batch": ("sparse_embeddings.ner:encode_batch",),
    "masked_cross_entropy": ("sparse_embeddings.ner:masked_cross_entropy",),
    "build_tagger": ("sparse_embeddings.ner:build_tagger",
                     "sparse_embeddings.tagging:make_tagger"),
    "train_step": ("sparse_embeddings.ner:train_step", "sparse_embeddings.tagging:fit"),
    "extract_spans": ("sparse_embeddings.ner:extract_spans",),
    "precision_recall_f1": ("sparse_embeddings.ner:precision_recall_f1",),
    "shard_of": ("sparse_embeddings.cluster:shard_of", "sparse_embeddings.cluster:shard_sizes"),
    "step_traffic_bytes": ("sparse_embeddings.cluster:predicted_traffic",),
    "sharded_lookup": ("sparse_embeddings.cluster:lookup",),
})


class Delegated(CheckFailed):
    """Raised by a tripwire, and by `own_work` when one was reached."""


def versions(exercise: str) -> list[tuple[str, object]]:
    """(dotted name, object) of each library version of `exercise`."""
    found = []
    for spec in MIRRORS.get(exercise, ()):
        module, _, attribute = spec.partition(":")
        found.append((f"{module}.{attribute}", getattr(importlib.import_module(module),
                                                       attribute)))
    return found


def _functions(obj) -> list[types.FunctionType]:
    """The plain Python functions behind a library object: itself, what a decorator
    wraps, a class's own methods."""
    if isinstance(obj, type):
        found = []
        for value in vars(obj).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            elif isinstance(value, property):
                found += [f for f in (value.fget, value.fset) if f is not None]
                continue
            if isinstance(value, types.FunctionType):
                found.append(value)
        return found
    obj = getattr(obj, "python_function", obj)  # a tf.function
    while hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    return [obj] if isinstance(obj, types.FunctionType) else []


def _header(function: types.FunctionType) -> str:
    """`function`'s parameters with every default as None and no annotations: the
    tripwire keeps the signature that callers (Keras reads `__init__`'s) inspect."""
    parts, star, positional_only = [], False, False
    for p in inspect.signature(function).parameters.values():
        if positional_only and p.kind is not p.POSITIONAL_ONLY:
            parts.append("/")
        positional_only = p.kind is p.POSITIONAL_ONLY
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name + ("=None" if p.default is not p.empty else ""))
    if positional_only:
        parts.append("/")
    return ", ".join(parts)


def _forward(function: types.FunctionType) -> str:
    """The arguments of a call that passes on every parameter of `function` as it came."""
    parts = []
    for p in inspect.signature(function).parameters.values():
        parts.append({p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}",
                      p.KEYWORD_ONLY: f"{p.name}={p.name}"}.get(p.kind, p.name))
    return ", ".join(parts)


class _Gate:
    """What a tripwire calls: the library's own code for a caller outside the answer (a
    test computing its reference), a recorded refusal for the answer."""

    def __init__(self, name: str, original, answer_codes: frozenset | None, calls: list):
        self.name, self.original, self.answer_codes, self.calls = (
            name, original, answer_codes, calls)

    def __call__(self, *args, **kwargs):
        frame = sys._getframe(2)  # the tripwire's caller
        from_answer = self.answer_codes is None  # an answer of unknown shape: any call
        while frame is not None and not from_answer:
            from_answer = frame.f_code in self.answer_codes
            frame = frame.f_back
        if not from_answer:
            return self.original(*args, **kwargs)
        self.calls.append(self.name)
        raise Delegated(f"this called the course library's {self.name}, which this "
                        "exercise asks you to write yourself")


def _tripwire_code(gate: _Gate, function: types.FunctionType) -> types.CodeType:
    """A code object with `function`'s signature (its defaults stay on the function) that
    passes the call to `gate`; its free variables match (`__class__` where a method
    calls super())."""
    freevars = function.__code__.co_freevars
    lines = ["def outer():"]
    lines += [f"    {var} = None" for var in freevars]
    lines += [f"    def tripwire({_header(function)}):"]
    if freevars:
        lines += ["        " + ", ".join(freevars)]
    lines += ["        _course_gate = '__GATE__'",
              f"        return _course_gate({_forward(function)})", "    return tripwire"]
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from names only
    code = namespace["outer"]().__code__
    return code.replace(co_consts=tuple(gate if c == "__GATE__" else c
                                        for c in code.co_consts))


def _copy_of(function: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    copy = types.FunctionType(code, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def _unwrap(answer):
    """The function behind a partial, a bound method, a tf.function, a decorator."""
    for _ in range(20):
        inner = (getattr(answer, "func", None) or getattr(answer, "__func__", None)
                 or getattr(answer, "python_function", None)
                 or getattr(answer, "__wrapped__", None))
        if inner is None or inner is answer:
            break
        answer = inner
    return answer


def _answer_codes(answer) -> frozenset | None:
    """The code objects that run as the answer: its functions (a class's methods) and the
    functions, lambdas and comprehensions inside them. None where the answer is not a
    plain function or class (a callable object): then any call counts."""
    answer = _unwrap(answer)
    functions = []
    if isinstance(answer, type):
        for klass in answer.__mro__:
            if not klass.__module__.startswith(("keras", "tensorflow", "builtins",
                                                "sparse_embeddings")):
                functions += _functions(klass)
    elif isinstance(answer, types.FunctionType):
        functions = [answer]
    if not functions:
        return None
    codes, todo = set(), [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        if code not in codes:
            codes.add(code)
            todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(codes)


@contextlib.contextmanager
def _tripwires(exercise: str, answer):
    """Swap the code of every library version of `exercise` for a tripwire; yields the
    list of the names the answer reached."""
    calls: list[str] = []
    codes = _answer_codes(answer)
    swapped = []
    try:
        for name, obj in versions(exercise):
            for function in _functions(obj):
                original = function.__code__
                label = name if function.__name__ == name.rsplit(".", 1)[-1] else \
                    f"{name}.{function.__name__}"
                gate = _Gate(label, _copy_of(function, original), codes, calls)
                code = _tripwire_code(gate, function)
                if code.co_freevars != original.co_freevars:
                    continue
                function.__code__ = code
                swapped.append((function, original))
        yield calls
    finally:
        for function, original in swapped:
            function.__code__ = original


def _fingerprint(code: types.CodeType) -> tuple:
    """Where a code object was compiled from: the library's file and line for a copy of
    a library function, a notebook cell for an answer typed out (even the same lines)."""
    return code.co_filename, code.co_firstlineno, code.co_name


def _reachable(functions: list, depth: int = 3) -> list[types.FunctionType]:
    """The functions given and those they name (globals, closures, nested code), a few
    steps deep: where a copy of a library function would hide behind an answer."""
    seen: dict[int, types.FunctionType] = {}
    frontier = list(functions)
    for _ in range(depth):
        found = []
        for function in frontier:
            if id(function) in seen:
                continue
            seen[id(function)] = function
            names, codes = set(), [function.__code__]
            while codes:
                code = codes.pop()
                names |= set(code.co_names)
                codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            values = [function.__globals__.get(n) for n in names]
            values += [cell.cell_contents for cell in function.__closure__ or ()
                       if _filled(cell)]
            for value in values:
                found += _functions(value) if isinstance(value, (type, types.FunctionType)) \
                    else []
        frontier = found
    return list(seen.values()) + frontier


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _copies(answer, references: list[tuple[str, object]]) -> list[str]:
    """Names of library versions whose code the answer runs as its own: the answer is one,
    subclasses one, or names one or a function built from its code object."""
    prints = {}
    for name, obj in references:
        for function in _functions(obj):
            prints[_fingerprint(function.__code__)] = name
    answer = _unwrap(answer)
    mine = _functions(answer)
    if isinstance(answer, type):
        for base in answer.__mro__[1:]:
            if base.__module__.startswith("sparse_embeddings"):
                mine += _functions(base)
    return sorted({prints[_fingerprint(f.__code__)] for f in _reachable(mine)
                   if _fingerprint(f.__code__) in prints})


@contextlib.contextmanager
def own_work(exercise: str, answer=None):
    """Run the block (a test calling the student's answer) with the library's versions of
    `exercise` turned into tripwires, and eagerly (AutoGraph would run the library's
    source, not its code). Fails, naming the library version, if the answer reached one,
    or if `answer` (the student's function or class) is, subclasses or names one."""
    import tensorflow as tf

    references = versions(exercise)
    if not references:
        raise ValueError(f"no library version of {exercise!r} is listed in MIRRORS")
    copied = _copies(answer, references) if answer is not None else []
    if copied:
        raise Delegated(f"{exercise} uses the course library's "
                        f"{', '.join(sorted(set(copied)))}: this exercise asks you to write "
                        "it yourself, so it scores no points this way.")
    eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        with warnings.catch_warnings(), _tripwires(exercise, answer) as calls:
            # tf.data says, on stderr, that it stays in graph mode: true, and harmless here
            warnings.filterwarnings("ignore", message="Even though the `tf.config.experimental")
            try:
                yield
            except Exception:
                if not calls:  # the answer's own mistake: the test's message stands
                    raise
    finally:
        tf.config.run_functions_eagerly(eager)
    if calls:
        raise Delegated(f"{exercise} calls the course library's {sorted(set(calls))[0]}: this "
                        "exercise asks you to write it yourself, so it scores no points "
                        "this way. (Later notebooks use the library's version; this one "
                        "teaches how it works.)")


@contextlib.contextmanager
def known_good(caller, *callees: str):
    """Run the block with the library's version of each exercise in `callees` bound, in
    the caller's own namespace, to the name the caller calls: a mistake in the student's
    callee then costs only the callee's points, and the caller's test judges the caller.
    The student's functions are bound again afterwards."""
    namespace = _unwrap(caller).__globals__
    missing = object()
    saved = {name: namespace.get(name, missing) for name in callees}
    try:
        for name in callees:
            namespace[name] = versions(name)[0][1]
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value
