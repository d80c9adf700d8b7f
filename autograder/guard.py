"""Kernel side of grading: test cells that run as written, and evidence that they did.

The grading kernel (`autograder.kernel`) calls `install(key)` once, before any student code
runs. From then on:

- A test cell reaches the kernel as `MAGIC + header + source` and is run by `run_test`,
  not by IPython: no input or AST transformer, custom exception handler or event hook of
  the student's sees it or changes it. Before the cell runs, `run_test` puts back the
  guarded modules' attributes, every module object of `sys.modules` that existed at start,
  the builtins, IPython's hooks and the trace functions, and lists what it had to put back.
  The cell runs in a fresh copy of the notebook's namespace with the release's own imports
  bound again, and after it the same things are compared once more.
- The evidence that a test cell ran whole and raised nothing is an HMAC, over the nonce the
  grader sent, the hash of the source that ran and the outcome, with a key that the grader
  wrote for this kernel alone (read and deleted at start). The key lives only in the
  closure of an audit hook (PEP 578), which no Python code can reach or remove: the hook
  refuses `gc` introspection, new audit hooks and ctypes' raw object pointers, and it signs
  only for a frame that runs `run_test`'s own code with the original helpers. While a test
  cell runs it also refuses trace and profile functions, `sys._current_frames` and ctypes.

What this does not stop: code that the test itself calls (the student's function) runs in
the same process and may, with enough effort, change the test's namespace through frames
and undo the change before the cell ends; a background thread racing the checks. The
sandbox (autograder.sandbox) bounds what such code can reach; it cannot change another
student's grade.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import importlib
import sys
import threading

MAGIC = "#course-grade-test "
SIGN_EVENT = "course_grade.sign"
ENTER_EVENT = "course_grade.enter"
LEAVE_EVENT = "course_grade.leave"
GUARDED_MODULES = ("builtins", "numpy", "numpy.testing", "numpy.testing._private.utils",
                   "sparse_embeddings.checks", "sparse_embeddings.tf1", "tensorflow",
                   # the library's versions of exercises, and the tests that watch them
                   "sparse_embeddings.mirrors", "sparse_embeddings.sparse",
                   "sparse_embeddings.layers", "sparse_embeddings.optimizers",
                   "sparse_embeddings.ner", "sparse_embeddings.spans",
                   "sparse_embeddings.tagging", "sparse_embeddings.cluster")
# IPython puts these into builtins while a cell runs, a fresh object each time;
# ipykernel swaps `input` (and `raw_input`, `getpass`) for each request.
VOLATILE_BUILTINS = frozenset({"get_ipython", "exit", "quit", "display", "_", "__", "___",
                               "input", "raw_input", "getpass"})
# Refused at any time, and while a test cell runs.
ALWAYS_REFUSED = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents",
                            "sys.addaudithook", "ctypes.PyObj_FromPtr"})
REFUSED_IN_TESTS = frozenset({"sys.settrace", "sys.setprofile", "sys._current_frames"})


def signature(key: bytes, nonce: str, imports: str, source: str, status: str) -> str:
    """What the grader expects back for a test cell that ran with this outcome."""
    digest = hashlib.sha256((imports + "\0" + source).encode()).hexdigest()
    return hmac.new(key, f"{nonce}\0{digest}\0{status}".encode(), "sha256").hexdigest()


def _pristine_modules() -> tuple:
    """(name, module, a copy of its attributes) taken at start: every attribute of the
    guarded modules; of every other module loaded by then, the attributes that hold a
    module, a function or a class (what a notebook would swap to fool a test)."""
    import types

    kinds = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)
    for name in GUARDED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    saved = []
    for name, module in sorted(sys.modules.items()):
        if not isinstance(module, types.ModuleType):
            continue
        try:
            attributes = dict(vars(module))
        except TypeError:
            continue
        if name not in GUARDED_MODULES:
            attributes = {k: v for k, v in attributes.items() if isinstance(v, kinds)}
        if attributes:
            saved.append((name, module, attributes))
    return tuple(saved)


def _ipython_hooks(shell) -> dict:
    if shell is None:
        return {}
    return {"input_transformer_manager": shell.input_transformer_manager,
            "input_transformers_cleanup": list(shell.input_transformers_cleanup),
            "input_transformers_post": list(shell.input_transformers_post),
            "ast_transformers": list(shell.ast_transformers),
            "events": {name: list(callbacks) for name, callbacks
                       in shell.events.callbacks.items()}}


def run_test(source: str, imports: str, nonce: str, namespace: dict, shell=None, *,
             _o=None) -> dict:
    """Run one test cell as written; returns status, error, what was put back, signature.

    Only `_o` (the originals taken at start) and the arguments are used: no global name,
    so a notebook that rebinds this module's names changes nothing here.
    """
    (exec_, compile_, audit, BaseException_, dict_, list_, type_,
     settrace, setprofile, thread_settrace, thread_setprofile, sys_modules, modules_at_start,
     pristine, builtins_module, volatile, hooks_at_start, getattr_) = _o
    found = []
    # 1. Put back what the notebook replaced.
    settrace(None)
    setprofile(None)
    thread_settrace(None)
    thread_setprofile(None)
    for name, module in modules_at_start.items():
        if sys_modules.get(name) is not module:
            sys_modules[name] = module
            found.append(f"sys.modules[{name!r}]")
    for name, module, saved in pristine:
        current = module.__dict__
        for key, value in saved.items():
            if name == "builtins" and key in volatile:
                continue
            if current.get(key, pristine) is not value:
                current[key] = value
                found.append(f"{name}.{key}")
    if shell is not None:
        try:
            for attribute, saved in hooks_at_start.items():
                if attribute == "events":
                    for event, callbacks in saved.items():
                        if shell.events.callbacks.get(event) != callbacks:
                            shell.events.callbacks[event] = list_(callbacks)
                            found.append(f"IPython event callbacks ({event})")
                elif attribute == "input_transformer_manager":
                    if shell.input_transformer_manager is not saved:
                        shell.input_transformer_manager = saved
                        found.append("IPython input_transformer_manager")
                elif getattr_(shell, attribute) != saved:
                    getattr_(shell, attribute)[:] = saved
                    found.append(f"IPython {attribute}")
            if shell.custom_exceptions:
                shell.set_custom_exc((), None)
                found.append("IPython custom exception handler")
        except BaseException_ as raised:  # IPython itself broken: the test runs regardless
            found.append(f"IPython could not be put back ({type_(raised).__name__})")
    # 2. The namespace: the notebook's names, the release's imports bound again.
    scope = dict_(namespace)
    scope["__builtins__"] = builtins_module
    status = "error"
    error = None
    bound = dict_()
    bound["__builtins__"] = builtins_module
    try:
        exec_(compile_(imports, "<imports>", "exec"), bound)
        for key, value in bound.items():
            if key in namespace and namespace[key] is not value:
                found.append(key)
            scope[key] = value
        code = compile_(source, "<test cell>", "exec", dont_inherit=True)
    except BaseException_ as raised:  # an import the notebook broke
        error = raised
        code = None
    # 3. The cell itself.
    if code is not None:
        audit("course_grade.enter")
        try:
            exec_(code, scope)
            status = "ok"
        except BaseException_ as raised:
            error = raised
        finally:
            audit("course_grade.leave")
    # 4. Nothing it relies on was swapped while it ran.
    if status == "ok":
        changed = [key for key, value in bound.items() if scope.get(key) is not value]
        if scope.get("__builtins__") is not builtins_module:
            changed.append("__builtins__")
        for name, module, saved in pristine:
            current = module.__dict__
            changed += [f"{name}.{key}" for key, value in saved.items()
                        if not (name == "builtins" and key in volatile)
                        and current.get(key, pristine) is not value]
        if changed:
            status = "tampered"
            found.append("changed while the test ran: " + ", ".join(changed))
    holder = []
    audit("course_grade.sign", holder)
    # The cell's new names stay in the notebook, as when a cell runs in it.
    for key, value in scope.items():
        if key not in bound and (
                key not in namespace or namespace[key] is not value):
            namespace[key] = value
    return {"status": status, "error": error, "found": found,
            "signature": holder[0] if holder else ""}


def originals(shell=None) -> tuple:
    """The tuple `run_test` takes as `_o`; call once, before any student code runs."""
    return (exec, compile, sys.audit, BaseException, dict, list, type,
            sys.settrace, sys.setprofile, threading.settrace, threading.setprofile,
            sys.modules, dict(sys.modules), _pristine_modules(), builtins,
            VOLATILE_BUILTINS, _ipython_hooks(shell), getattr)


def install(key: bytes, shell=None):
    """Take the originals, install the audit hook that holds `key`; returns `run_test`'s
    `_o`. The key is used by nothing else."""
    runner_code = run_test.__code__
    original = originals(shell)
    signer = hmac.new(key, digestmod="sha256")
    sha256 = hashlib.sha256
    getframe = sys._getframe
    gettrace, getprofile = sys.gettrace, sys.getprofile
    type_, str_, isinstance_ = type, str, isinstance
    refused_always, refused_in_tests = ALWAYS_REFUSED, REFUSED_IN_TESTS
    protected = (run_test, install, signature)
    state = [False, 0]  # a test cell is running; 1 after enter, 2 after leave

    def trusted_caller():
        frame = getframe(2)
        return frame.f_code is runner_code and frame.f_locals.get("_o") is original

    watched = refused_always | refused_in_tests | {
        "function.__new__", "object.__setattr__", "open", ENTER_EVENT, LEAVE_EVENT, SIGN_EVENT}

    def hook(event, args):
        if event not in watched:  # the common case, kept cheap: most events pass here
            if state[0] and event.startswith("ctypes."):
                raise RuntimeError(f"course-grade: {event} is not allowed while grading")
            return
        if event in refused_always or (state[0] and event in refused_in_tests):
            raise RuntimeError(f"course-grade: {event} is not allowed while grading")
        if event == "function.__new__" and args and args[0] is runner_code:
            raise RuntimeError("course-grade: the grader's runner cannot be copied")
        if event == "object.__setattr__" and args and any(args[0] is p for p in protected):
            raise RuntimeError("course-grade: the grader's functions cannot be changed")
        if event == "open" and args and type_(args[0]) is str_ and \
                args[0].startswith("/proc/") and args[0].endswith("/mem"):
            raise RuntimeError("course-grade: process memory cannot be read while grading")
        if event == ENTER_EVENT:
            if not trusted_caller():
                raise RuntimeError("course-grade: not the grader's runner")
            if state[0] or gettrace() is not None or getprofile() is not None:
                raise RuntimeError("course-grade: a trace function is still set")
            state[0], state[1] = True, 1
        elif event == LEAVE_EVENT:
            if not trusted_caller() or state[1] != 1:
                raise RuntimeError("course-grade: not the grader's runner")
            state[0], state[1] = False, 2
        elif event == SIGN_EVENT:
            frame = getframe(1)
            if frame.f_code is not runner_code or frame.f_locals.get("_o") is not original:
                return  # no signature for anyone else
            ran_whole = state[1] == 2 and gettrace() is None and getprofile() is None
            state[1] = 0
            if not ran_whole:
                return
            values = frame.f_locals
            parts = [values.get(name) for name in ("nonce", "imports", "source", "status")]
            if not all(type_(p) is str_ for p in parts):
                return
            nonce, imports, source, status = parts
            digest = sha256((imports + "\0" + source).encode()).hexdigest()
            mac = signer.copy()
            mac.update(f"{nonce}\0{digest}\0{status}".encode())
            holder = args[0] if args else None
            if isinstance_(holder, list) and type_(holder) is list:
                holder.append(mac.hexdigest())

    sys.addaudithook(hook)
    return original
