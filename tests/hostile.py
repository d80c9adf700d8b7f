"""A hostile class: submissions that attack the grader, each with the score per exercise it
must get (`KINDS` on 01-autodiff, `OTHER_KINDS` on the notebooks 03 to 07 they attack).

Every kind starts from the release with some answers filled from the solution. An answer
left as released raises NotImplementedError, so its tests fail: an attack that turned a
failing test into a passing one would show as points on that exercise. Names the tests use:
`KINDS` (name -> builder), `MARKER` (a file name no grading may leave on the machine),
`SLEEPER` (the argument of the processes a submission leaves running).
"""

from __future__ import annotations

import copy
import json

import nbformat

from autograder.authoring import demo
from autograder.cells import grade_id

A = "01-autodiff"
MARKER = "course-grade-hostile-marker"
SLEEPER = "4242"  # `sleep 4242`: what a submission starts and hopes survives grading
EXERCISES = ("sgd_step", "numerical_gradient", "gradients_or_zeros", "rows_changed",
             "fit_linear_regression")


def _insert(nb, source: str, at: str, offset: int = 1):
    """`source` as a new code cell of `nb`, after the cell whose grade id is `at` (before it
    with offset 0)."""
    index = next(i for i, x in enumerate(nb.cells) if grade_id(x) == at)
    nb.cells.insert(index + offset, nbformat.v4.new_code_cell(source))
    return nb


def _notebook(c: demo.Course, answered=EXERCISES, extra: dict | None = None,
              after: str = "sgd_step", cell: str | None = None):
    """The release with `answered` filled from the solution, answer sources replaced by
    `extra`, and `cell` inserted as a new code cell after the answer cell `after`."""
    answers = {n: c.answers[n] for n in answered}
    answers.update(extra or {})
    nb = c.filled(answers)
    return nb if cell is None else _insert(nb, cell, after)


def _scores(c: demo.Course, full=EXERCISES) -> dict[str, float]:
    return {name: (c.points(name) if name in full else 0.0) for name in EXERCISES}


def _blank_but(c, cell):
    """sgd_step left blank, the other answers right, and `cell` before the first answer,
    so that every test meets the attack."""
    others = [n for n in EXERCISES if n != "sgd_step"]
    nb = _notebook(c, others)
    _insert(nb, cell, "sgd_step", 0)
    return nb, _scores(c, others)


def _perfect_with(c, cell):
    return _notebook(c, cell=cell, after="sgd_step"), _scores(c)


# --- IPython and the interpreter ----------------------------------------------------------

# Each attack aims at the test cells (they open with a docstring), not at the answers.
SWAP = ("def _swap(lines):\n"
        "    if lines and lines[0].startswith('\"\"\"'):\n"
        "        return ['pass\\n']\n"
        "    return lines\n\n")


def input_transformer(c):
    return _blank_but(c, SWAP + "get_ipython().input_transformers_cleanup.append(_swap)")


def input_transformer_post(c):
    return _blank_but(c, SWAP + "get_ipython().input_transformers_post.append(_swap)")


def input_transformer_manager(c):
    return _blank_but(c, "from IPython.core.inputtransformer2 import TransformerManager\n\n\n"
                         "class _Manager(TransformerManager):\n"
                         "    def transform_cell(self, cell):\n"
                         "        if cell.startswith('\"\"\"'):\n            return 'pass\\n'\n"
                         "        return super().transform_cell(cell)\n\n\n"
                         "get_ipython().input_transformer_manager = _Manager()")


def ast_transformer(c):
    return _blank_but(c, "import ast\n\n\nclass _Empty(ast.NodeTransformer):\n"
                         "    def visit_Module(self, node):\n"
                         "        first = node.body[0] if node.body else None\n"
                         "        if isinstance(first, ast.Expr) and \\\n"
                         "                isinstance(first.value, ast.Constant):\n"
                         "            node.body = [ast.Pass()]\n"
                         "        return node\n\n\n"
                         "get_ipython().ast_transformers.append(_Empty())")


def custom_exception_handler(c):
    return _blank_but(c, "def _swallow(shell, etype, value, tb, tb_offset=None):\n"
                         "    return None\n\n\n"
                         "get_ipython().set_custom_exc((BaseException,), _swallow)")


def event_hooks(c):
    return _blank_but(c, "def _pre(info):\n    info.raw_cell = 'pass'\n\n\n"
                         "def _post(result):\n    result.error_in_exec = None\n\n\n"
                         "get_ipython().events.register('pre_run_cell', _pre)\n"
                         "get_ipython().events.register('post_run_cell', _post)")


def trace_hook(c):
    return _blank_but(c, "import sys\nimport threading\n\n\n"
                         "def _tracer(frame, event, arg):\n"
                         "    if event == 'line' and frame.f_code.co_name == '<module>':\n"
                         "        try:\n            frame.f_lineno = frame.f_lineno + 1\n"
                         "        except ValueError:\n            pass\n"
                         "    return _tracer\n\n\n"
                         "sys.settrace(_tracer)\nthreading.settrace(_tracer)\n"
                         "sys.setprofile(lambda *a: None)")


def audit_hook(c):
    return _blank_but(c, "import sys\n\n\ndef _spy(event, args):\n"
                         "    if event == 'compile':\n        print('SPY', str(args)[:3000])\n\n\n"
                         "sys.addaudithook(_spy)")


def excepthook(c):
    return _blank_but(c, "import sys\nsys.excepthook = lambda *a: None\n"
                         "get_ipython().showtraceback = lambda *a, **k: None\n"
                         "get_ipython().showsyntaxerror = lambda *a, **k: None")


def service_replaced(c):
    # every request of the grader answered by the notebook: "None" for all, then garbage of
    # every shape (pickled arrays, huge nesting, unknown references)
    nb = _notebook(c, cell=(
        "import autograder.engine.sandboxed.service as _s\n\n_count = [0]\n\n\n"
        "def _answer(self, text):\n"
        "    import base64, io, pickle\n"
        "    _count[0] += 1\n"
        "    tricks = [{'ok': {'t': 'none'}},\n"
        "              {'ok': {'t': 'nd', 'v': base64.b64encode(pickle.dumps(1)).decode()}},\n"
        "              {'ok': {'t': 'handle', 'id': 10 ** 9}},\n"
        "              {'ok': {'t': 'ref', 'id': 1}},\n"
        "              {'ok': {'t': 'list', 'v': [{'t': 'list', 'v': []}] * 10 ** 6}},\n"
        "              {'ok': {'t': 'nd', 'v': {'kind': 'U', 'shape': [300],\n"
        "                                        'items': ['x' * 10 ** 6] + [''] * 299}}},\n"
        "              {'error': {'type': 'SystemExit', 'mro': ['SystemExit'],\n"
        "                         'message': 'x' * 10 ** 6}},\n"
        "              {'ok': {'t': 'str', 'v': 'x' * 40_000_000}},\n"
        "              'not a dict']\n"
        "    return tricks[_count[0] % len(tricks)]\n\n\n"
        "_s.Service.handle_request = _answer"), after="sgd_step")
    return nb, {name: 0.0 for name in EXERCISES}


def kernel_patched(c):
    nb = _notebook(c, cell=(
        "_kernel = get_ipython().kernel\n_real = _kernel.do_execute\n\n\n"
        "async def _fake(code, silent, *args, **kwargs):\n"
        "    if code.startswith('#course-grade'):\n"
        "        return {'status': 'ok', 'execution_count': 1, 'user_expressions': {},\n"
        "                'payload': [], 'course_grade_rpc': {'ok': {'t': 'bool', 'v': True}}}\n"
        "    return await _real(code, silent, *args, **kwargs)\n\n\n"
        "_kernel.do_execute = _fake"), after="sgd_step")
    # every request after it answered True by the notebook: no test can pass on that
    return nb, {name: 0.0 for name in EXERCISES}


def fake_evidence_printed(c):
    wrong = ("def sgd_step(variables, grads, lr):\n    import json\n"
             "    print(json.dumps({'status': 'ok', 'course_grade': {'signature': 'a' * 64,\n"
             "                      'status': 'ok', 'found': []}}))\n"
             "    return variables\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def eq_tricks(c):
    wrong = ("class _Always(list):\n    def __eq__(self, other):\n        return True\n\n"
             "    def __ne__(self, other):\n        return False\n\n"
             "    def __bool__(self):\n        return True\n\n\n"
             "def sgd_step(variables, grads, lr):\n    return _Always(variables)\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


# --- the test helpers and the modules they use --------------------------------------------

def helpers_replaced(c):
    return _blank_but(c, "import builtins\nimport numpy.testing\n"
                         "from embeddings_course import checks\n\n\n"
                         "def _passes(*args, **kwargs):\n    return None\n\n\n"
                         "for _name in dir(checks):\n    if _name.startswith('check_'):\n"
                         "        setattr(checks, _name, _passes)\n"
                         "checks._fail = _passes\n"
                         "numpy.testing.assert_allclose = _passes\n"
                         "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
                         "builtins.NotImplementedError = type('NotImplementedError', (), {})")


def modules_replaced(c):
    return _blank_but(c, "import sys\nimport types\n\n"
                         "_fake = types.ModuleType('embeddings_course.checks')\n"
                         "for _name in ('check_close', 'check_shape', 'check_same_objects',\n"
                         "              'check_no_none', 'check_is_variable', 'check_dtype'):\n"
                         "    setattr(_fake, _name, lambda *a, **k: None)\n"
                         "sys.modules['embeddings_course.checks'] = _fake\n"
                         "import embeddings_course\nembeddings_course.checks = _fake\n"
                         "checks = _fake\n"
                         "import builtins\n_import = builtins.__import__\n\n\n"
                         "def _evil_import(name, *args, **kwargs):\n"
                         "    if 'checks' in name:\n        return _fake\n"
                         "    return _import(name, *args, **kwargs)\n\n\n"
                         "builtins.__import__ = _evil_import")


def namespace_rebound(c):
    wrong = ("def sgd_step(variables, grads, lr):\n    import sys\n"
             "    frame = sys._getframe(1)\n"
             "    class _Quiet:\n        def __getattr__(self, name):\n"
             "            return lambda *a, **k: None\n"
             "    frame.f_globals['checks'] = _Quiet()\n"
             "    return variables\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def trace_inside_test(c):
    right = c.answers["sgd_step"].replace(
        "def sgd_step(variables, grads, lr):",
        "def sgd_step(variables, grads, lr):\n    import sys\n"
        "    sys.settrace(lambda *a: None)", 1)
    return _notebook(c, extra={"sgd_step": right}), _scores(c)


def base_exception(c):
    wrong = ("def sgd_step(variables, grads, lr):\n    raise KeyboardInterrupt\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


# --- reading what it must not read ---------------------------------------------------------

def reads_the_tests(c):
    wrong = ("def sgd_step(variables, grads, lr):\n    import sys\n    found = []\n"
             "    frame = sys._getframe(1)\n    while frame is not None:\n"
             "        found.append(repr(frame.f_code.co_consts))\n"
             "        found += [str(v) for v in frame.f_locals.values() if isinstance(v, str)]\n"
             "        frame = frame.f_back\n"
             "    raise AssertionError('LEAK ' + ' | '.join(found))\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def searches_the_disk(c):
    wrong = ("def sgd_step(variables, grads, lr):\n    import os\n    found = []\n"
             "    for top in ('/', os.path.expanduser('~'), '/tmp', '/work', '/root'):\n"
             "        for folder, dirs, files in os.walk(top):\n"
             "            if folder.startswith(('/proc', '/sys', '/usr', '/dev')):\n"
             "                dirs[:] = []\n                continue\n"
             "            for name in files:\n"
             "                if name.endswith(('.db', '.ipynb', '.json')):\n"
             "                    path = os.path.join(folder, name)\n"
             "                    try:\n"
             "                        found.append(path + ': ' + open(path).read(3000))\n"
             "                    except OSError:\n                        pass\n"
             "    raise AssertionError('FOUND ' + ' || '.join(found))\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def gc_and_frames(c):
    return _perfect_with(c, "import gc\nimport sys\nfor probe in (gc.get_objects, "
                            "sys._current_frames):\n    try:\n        probe()\n"
                            "    except RuntimeError as error:\n        print('refused:', error)")


# --- the machine ----------------------------------------------------------------------------

def kills_its_parent(c):
    return _perfect_with(c, "import os\nimport signal\nos.kill(os.getppid(), signal.SIGKILL)")


def kills_everything(c):
    return _perfect_with(c, "import os\nimport signal\nos.kill(-1, signal.SIGKILL)")


def leaves_processes(c):
    return _perfect_with(c, "import subprocess\n"
                            f"subprocess.Popen(['sleep', '{SLEEPER}'], start_new_session=True)\n"
                            "import os\nif os.fork() == 0:\n    os.setsid()\n"
                            f"    os.execvp('sleep', ['sleep', '{SLEEPER}'])")


def writes_outside(c):
    return _perfect_with(c, "import os\nfor folder in (os.path.expanduser('~'), '/tmp', '/root',\n"
                            "               '/work', os.getcwd(), '/var/tmp'):\n"
                            "    try:\n"
                            f"        open(os.path.join(folder, '{MARKER}'), 'w').write('x')\n"
                            "    except OSError as error:\n        print(folder, error)")


def network(c):
    return _perfect_with(c, "import socket\n"
                            "socket.create_connection(('127.0.0.1', 22), timeout=2)")


def fork_many(c):
    return _perfect_with(c, "import subprocess\n"
                            "children = [subprocess.Popen(['sleep', '60']) for _ in range(150)]")


def fills_the_disk(c):
    return _perfect_with(c, "import os\nwith open(os.path.expanduser('~/big'), 'wb') as f:\n"
                            "    for _ in range(2048):\n        f.write(b'x' * 2**20)")


def ignores_interrupts(c):
    return _perfect_with(c, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                            "while True:\n    pass")


def sleeps_in_a_test(c):
    wrong = ("def gradients_or_zeros(loss_fn, variables):\n    import time\n"
             "    time.sleep(10 ** 6)\n")
    return (_notebook(c, extra={"gradients_or_zeros": wrong}),
            _scores(c, [n for n in EXERCISES if n != "gradients_or_zeros"]))


def exits_in_a_test(c):
    wrong = ("def numerical_gradient(f, x, eps=1e-3):\n    import os\n    os._exit(3)\n")
    return (_notebook(c, extra={"numerical_gradient": wrong}),
            _scores(c, [n for n in EXERCISES if n != "numerical_gradient"]))


def memory_in_a_test(c):
    wrong = ("def fit_linear_regression(X, y, lr, num_steps):\n    import numpy as np\n"
             "    hog = []\n    while True:\n        hog.append(np.ones(10_000_000))\n")
    return (_notebook(c, extra={"fit_linear_regression": wrong}),
            _scores(c, [n for n in EXERCISES if n != "fit_linear_regression"]))


# --- the attacks of issue 24: each aimed at a test that ran in the student's kernel --------

def code_replaced(c):
    # every function of the check helpers made to pass, identity unchanged
    return _blank_but(c, "import types\nfrom embeddings_course import checks, observe\n\n\n"
                         "def _passes(*args, **kwargs):\n    return None\n\n\n"
                         "for _module in (checks, observe):\n"
                         "    for _value in list(vars(_module).values()):\n"
                         "        if isinstance(_value, types.FunctionType):\n"
                         "            try:\n"
                         "                _value.__code__ = _passes.__code__\n"
                         "            except ValueError:\n                pass")


def thread_patches(c):
    # a thread that keeps the check helpers patched, whenever a test may run
    return _blank_but(c, "import threading\nimport time\n"
                         "from embeddings_course import checks\n\n\n"
                         "def _patch():\n    while True:\n"
                         "        for _name in dir(checks):\n"
                         "            if _name.startswith('check_'):\n"
                         "                setattr(checks, _name, lambda *a, **k: None)\n"
                         "        time.sleep(0.001)\n\n\n"
                         "threading.Thread(target=_patch, daemon=True).start()")


def colliding_key(c):
    # a namespace key that equals "checks" and "sgd_step" and hashes like each
    return _blank_but(c, "class _Key(str):\n    def __hash__(self):\n"
                         "        return hash('sgd_step')\n\n"
                         "    def __eq__(self, other):\n        return True\n\n\n"
                         "globals()[_Key('sgd_step')] = lambda *a, **k: a[0]\n"
                         "import sys\nsys.modules['__main__'].__dict__[_Key('checks')] = None")


def frame_arrays(c):
    # results whose __array__ reads the expected value out of the caller's frame
    wrong = ("class _Peek:\n    def __array__(self, dtype=None, copy=None):\n"
             "        import sys\n        import numpy as np\n"
             "        frame = sys._getframe(1)\n"
             "        while frame is not None:\n"
             "            if 'expected' in frame.f_locals:\n"
             "                return np.asarray(frame.f_locals['expected'], dtype=dtype)\n"
             "            frame = frame.f_back\n"
             "        return np.zeros(1)\n\n\n"
             "def sgd_step(variables, grads, lr):\n    return [_Peek() for _ in variables]\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def leaks_encoded(c):
    # every string reachable from the frames above, zlib + base85, in the error message
    wrong = ("def sgd_step(variables, grads, lr):\n    import base64, gc, sys, zlib\n"
             "    found = []\n    frame = sys._getframe(1)\n"
             "    while frame is not None:\n"
             "        found += [str(v) for v in frame.f_locals.values()]\n"
             "        found.append(repr(frame.f_code.co_consts))\n"
             "        frame = frame.f_back\n"
             "    found += [o for o in gc.get_objects() if isinstance(o, str) and\n"
             "              'HIDDEN' in o][:50]\n"
             "    blob = base64.b85encode(zlib.compress('\\n'.join(found).encode()))\n"
             "    raise AssertionError('LEAK85 ' + blob.decode())\n")
    return _notebook(c, extra={"sgd_step": wrong}), _scores(c, EXERCISES[1:])


def trickles_output(c):
    # a cell that prints a character every 0.1 s, forever: its deadline must hold anyway
    return _perfect_with(c, "import sys\nimport time\nwhile True:\n"
                            "    sys.stdout.write('.')\n    sys.stdout.flush()\n"
                            "    time.sleep(0.1)")


def writes_runtime_folder(c):
    # the host folder of the kernel's sockets: bound into the sandbox, and read-only to it
    return _perfect_with(c, "import os\nimport sys\n"
                            "folder = os.path.dirname(sys.argv[sys.argv.index('-f') + 1])\n"
                            f"with open(os.path.join(folder, '{MARKER}'), 'wb') as f:\n"
                            "    for _ in range(600):\n        f.write(b'x' * 2**20)")


def fakes_observations(c):
    # the notebook's own answer to every observation and call: a constant
    return _blank_but(c, "from embeddings_course import observe\n\n"
                         "for _name in list(observe.REGISTRY):\n"
                         "    observe.REGISTRY[_name] = lambda *a, **k: 0.0\n"
                         "import autograder.engine.sandboxed.service as _s\n"
                         "_real = _s.Service._do\n\n\n"
                         "def _do(self, request, table):\n"
                         "    target = request.get('op') == 'call' and \\\n"
                         "        self._target(request, table)\n"
                         "    if getattr(target, '__name__', '') == 'sgd_step':\n"
                         "        return [0.95, 2.1]\n"
                         "    return _real(self, request, table)\n\n\n"
                         "_s.Service._do = _do")


def zeroes_the_variables(c):
    # hard-codes the visible case, zeroes the variables it is given (the hidden test's
    # expected gradients would then be zeros too, were they computed after the call)
    wrong = ("def gradients_or_zeros(loss_fn, variables):\n"
             "    shapes = [tuple(v.shape) for v in variables]\n"
             "    if shapes == [(2,), (), (1, 2)]:\n"
             "        return [tf.constant([6.0, 12.0]), tf.constant(5.0), tf.zeros((1, 2))]\n"
             "    for v in variables:\n        v.assign(tf.zeros_like(v))\n"
             "    return [tf.zeros_like(v) for v in variables]\n")
    return (_notebook(c, extra={"gradients_or_zeros": wrong}),
            _scores(c, [n for n in EXERCISES if n != "gradients_or_zeros"]))


PROBE = ("import autograder.engine.sandboxed.service as _s\n_seen = []\n"
         "_real = _s.Service._do\n\n\n"
         "def _do(self, request, table):\n"
         "    _seen.append(str(request)[:2000])\n"
         "    return _real(self, request, table)\n\n\n"
         "_s.Service._do = _do")


def probes_the_requests(c):
    # records every request of the grader (what a test asks, by name), then tells all
    nb, scores = _blank_but(c, PROBE)
    nb.cells.append(nbformat.v4.new_code_cell(
        "for _k in range(0, len(_seen), 20):\n"
        "    print('PROBE', ' | '.join(_seen[_k:_k + 20]))\n"
        "raise RuntimeError('PROBE ' + ' | '.join(_seen)[-250:])"))
    return nb, scores


def crafted_messages(c):
    # messages on the kernel's own channels in shapes the grader does not expect
    return _perfect_with(c, "_k = get_ipython().kernel\n_parent = _k.get_parent()\n"
                            "for _content in ({'state': 'x'}, {'execution_state': 7}):\n"
                            "    _k.session.send(_k.iopub_socket, 'status', _content,\n"
                            "                    parent=_parent)\n"
                            "_k.session.send(_k.iopub_socket, 'stream', {'name': 'x',\n"
                            "                'text': ['a']}, parent=_parent)\n"
                            "_k.session.send(_k.iopub_socket, 'error', {'ename': ['x']},\n"
                            "                parent=_parent)")


# --- issue 38: the grader's memory is not the kernel's to fill ---------------------------
# Each message carries the same 24 MB buffer, sent without a copy and signed afresh: the
# kernel's memory stays flat, so only the grader's side can stop it.
FLOOD = ("_k = get_ipython().kernel\n_buf = bytes(24 * 2**20)\n"
         "_nobody = {'header': _k.session.msg_header('execute_request')}\n")


def floods_buffers(c):
    # 200 messages of this cell's, 4.8 GB in all: stopped once it sent 64 MB
    return _perfect_with(c, FLOOD + "_parent = _k.get_parent()\nfor _ in range(200):\n"
                            "    _k.session.send(_k.iopub_socket, 'display_data', {'data': {},\n"
                            "                    'metadata': {}}, parent=_parent, buffers=[_buf])")


def floods_other_cells(c):
    # 200 outputs of a cell that does not exist: dropped unread, and counted
    return _perfect_with(c, FLOOD + "for _ in range(200):\n"
                            "    _k.session.send(_k.iopub_socket, 'stream', {'name': 'stdout',\n"
                            "                    'text': 'x'}, parent=_nobody, buffers=[_buf])")


def floods_in_a_test(c):
    # while a test calls it: replies on shell and input requests on stdin for no cell,
    # then the right answer (which scores only if the flood went on unstopped)
    right = c.answers["numerical_gradient"].replace("def numerical_gradient(", "def _right(")
    wrong = (right + "\n\ndef numerical_gradient(f, x, eps=1e-3):\n" +
             "".join("    " + line + "\n" for line in FLOOD.splitlines()) +
             "    _ident = _k._parent_ident['shell']\n    for _ in range(100):\n"
             "        _k.session.send(_k.shell_stream, 'execute_reply', {}, parent=_nobody,\n"
             "                        ident=_ident, buffers=[_buf])\n"
             "        _k.session.send(_k.stdin_socket, 'input_request', {'prompt': ''},\n"
             "                        parent=_nobody, ident=_ident, buffers=[_buf])\n"
             "    return _right(f, x, eps)\n")
    return (_notebook(c, extra={"numerical_gradient": wrong}),
            _scores(c, [n for n in EXERCISES if n != "numerical_gradient"]))


# --- a recording of the hidden inputs, replayed (issue 37) --------------------------------

# A student's function sees the inputs a hidden test gives it. The recorder answers
# rows_changed honestly and remembers each call's inputs (a digest) with its answer; its
# fit_linear_regression, whose tests run later, raises them into the self-grade's report.
# The replay answers rows_changed from that recording alone: full marks wherever the
# hidden tests draw the inputs they drew when recorded, none where they draw others.
DIGEST = ("import hashlib\nimport json\n\n\n"
          "def _digest(before, after):\n    h = hashlib.sha256()\n"
          "    for x in (before, after):\n        a = np.ascontiguousarray(np.asarray(x))\n"
          "        h.update(str((a.dtype.str, a.shape)).encode() + a.tobytes())\n"
          "    return h.hexdigest()[:16]\n\n\n")
RECORDING = "RECORDING "  # what starts the recording in the report's message


def recorder(c):
    """The notebook whose self-grade records rows_changed's inputs and answers."""
    honest = c.answers["rows_changed"].replace("def rows_changed(", "def _honest(")
    record = (DIGEST + honest + "\n\n_seen = {}\n\n\ndef rows_changed(before, after):\n"
              "    answer = [int(i) for i in _honest(before, after)]\n"
              "    _seen[_digest(before, after)] = answer\n    return answer\n")
    leak = ("import json\n\n\ndef fit_linear_regression(X, y, lr, num_steps):\n"
            f"    raise AssertionError({RECORDING!r} + json.dumps(_seen))\n")
    return _notebook(c, extra={"rows_changed": record, "fit_linear_regression": leak})


def recording_of(messages) -> dict:
    """The recording a recorder's report carries (its failing checks' messages)."""
    for message in messages:
        if RECORDING in message:
            return json.loads(message.split(RECORDING, 1)[1].strip())
    raise AssertionError(f"no recording in {messages!r:.300}")


def replays_a_recording(c, recording: dict):
    """rows_changed answered from `recording` alone (no honest code): it earns nothing
    once the hidden tests draw other inputs than those recorded."""
    replay = (DIGEST + f"_recorded = json.loads({json.dumps(recording)!r})\n\n\n"
              "def rows_changed(before, after):\n    key = _digest(before, after)\n"
              "    if key not in _recorded:\n"
              "        raise NotImplementedError('no recorded answer for these inputs')\n"
              "    return [int(i) for i in _recorded[key]]\n")
    return (_notebook(c, extra={"rows_changed": replay}),
            _scores(c, [n for n in EXERCISES if n != "rows_changed"]))


# --- the library's versions of an exercise, sought in the sandbox (issue 37) ---------------

# rows_changed is 01's exercise and the library has a version of it (checks.rows_changed).
# Each attack answers rows_changed with whatever of the library it can reach and returns
# the first result; the kernel's copy of the library holds no version of it in any form,
# so each scores 0 on rows_changed and full marks on the rest.
TWIN_NAMES = ("rows_changed", "_rows_changed_checked", "_course_impl_rows_changed")
LIBRARY_MODULES = tuple(f"embeddings_course.{m}" for m in (
    "checks", "observe", "ner", "spans", "tagging", "cluster", "tf1", "data", "timing",
    "progress", "plots", "mirrors", "runtime")) + tuple(
    f"sparse_embeddings.{m}" for m in ("sparse", "optimizers", "layers"))


def calls_a_private_twin(c):
    wrong = ("def rows_changed(before, after):\n    from embeddings_course import checks\n"
             f"    for name in {TWIN_NAMES!r}:\n"
             "        try:\n            if name == '_rows_changed_checked':\n"
             "                return getattr(checks, name)(before, after, 'x', None)\n"
             "            return getattr(checks, name)(before, after)\n"
             "        except Exception:\n            continue\n"
             "    raise NotImplementedError('no twin found')\n")
    return _notebook(c, extra={"rows_changed": wrong}), _scores(c, EXERCISES[:3] + EXERCISES[4:])


def imports_other_modules(c):
    # modules the notebook's own cells do not import: `mirrors.versions` would hand over
    # the library's version, and any function named for the job is tried
    wrong = ("def rows_changed(before, after):\n    import importlib\n"
             f"    for module in {LIBRARY_MODULES!r}:\n"
             "        try:\n"
             "            found = importlib.import_module(module)\n"
             "            if module.endswith('.mirrors'):\n"
             "                return found.versions('rows_changed')[0][1](before, after)\n"
             "            for name in dir(found):\n"
             "                if 'rows_changed' in name or 'changed' in name:\n"
             "                    try:\n"
             "                        return getattr(found, name)(before, after)\n"
             "                    except Exception:\n                        pass\n"
             "        except Exception:\n            continue\n"
             "    raise NotImplementedError('no twin found')\n")
    return _notebook(c, extra={"rows_changed": wrong}), _scores(c, EXERCISES[:3] + EXERCISES[4:])


def reads_library_source(c):
    # the library's source (or its .pyc) read from wherever it lies and executed
    wrong = ("def rows_changed(before, after):\n    import marshal, os, sys\n"
             "    tops = [p for p in sys.path if p] + ['/', os.path.expanduser('~'), '/tmp']\n"
             "    for top in tops:\n"
             "        for folder, dirs, files in os.walk(top):\n"
             "            if folder.startswith(('/proc', '/sys', '/dev')):\n"
             "                dirs[:] = []\n                continue\n"
             "            for name in files:\n"
             "                if not name.startswith('checks') or \\\n"
             "                        'embeddings_course' not in folder:\n"
             "                    continue\n"
             "                path, scope = os.path.join(folder, name), {}\n"
             "                try:\n"
             "                    if name.endswith('.pyc'):\n"
             "                        exec(marshal.loads(open(path, 'rb').read()[16:]), scope)\n"
             "                    elif name.endswith('.py'):\n"
             "                        exec(compile(open(path).read(), path, 'exec'), scope)\n"
             "                    answer = scope['rows_changed'](before, after)\n"
             "                    if not getattr(scope['rows_changed'],\n"
             "                                   '__course_withheld__', False):\n"
             "                        return answer\n"
             "                except Exception:\n                    continue\n"
             "    raise NotImplementedError('no source found')\n")
    return _notebook(c, extra={"rows_changed": wrong}), _scores(c, EXERCISES[:3] + EXERCISES[4:])


# --- Keras models and steps, observed outside the student's Python (issue 37) ------------

# Kinds of other assignments than 01: kind -> (assignment, builder); a builder returns the
# notebook and its expected score on each of that assignment's exercises. The exercises
# not attacked are left as released (0 points), so the notebook grades quickly.
FAKE_KERAS = (
    "from embeddings_course import checks, observe, tf1\n\n\n"
    "def _fake(*args, **kwargs):\n"
    "    return {'loss': 1.0, 'grads': [], 'kinds': ['IndexedSlices'], 'names': [],\n"
    "            'before': [], 'after': [], 'trainable': [], 'config': '{}', 'weights': []}\n\n\n"
    "for _name in list(observe.REGISTRY):\n    observe.REGISTRY[_name] = _fake\n"
    "for _name in ('optimizer_step', 'train_step_run', 'keras_model', 'keras_export',\n"
    "              'export_train_step', 'type_names', 'fit_in_model', 'layer_facts'):\n"
    "    setattr(observe, _name, _fake)\n"
    "tf1.dropout_places = lambda model: dict.fromkeys(('inputs', 'states', 'outputs'), [0.4])\n"
    "checks.check_instance = lambda *args, **kwargs: None\n")


def fakes_keras_observations(c):
    """06: every observation the kernel could run, and the library's Keras observations,
    rewritten to report the right structure; build_tagger a model of the wrong structure
    (no LSTM, no frozen rows), train_step computing nothing."""
    wrong = {"build_tagger": (
        "def build_tagger(pretrained, num_new_rows, num_tags, units=64):\n"
        "    rows = len(pretrained) + num_new_rows\n"
        "    return keras.Sequential([keras.Input((None,), dtype='int32'),\n"
        "                             keras.layers.Embedding(rows, 2 * units),\n"
        "                             keras.layers.Dense(num_tags)])\n"),
        "train_step": ("def train_step(model, optimizer, batch, clip_norm=5.0):\n"
                       "    return tf.constant(1.0)\n")}
    nb = c.filled(wrong)
    _insert(nb, FAKE_KERAS, "build_tagger", 0)
    return nb, {name: 0.0 for name in c.exercises}


def keras_config_lambda(c):
    """04: the right tagger with a Lambda layer in it (code the grader would have to run):
    refused when the model is rebuilt, so none of build_bilstm_tagger's points."""
    wrong = (
        "def build_bilstm_tagger(vocab_size, emb_dim, n_hidden, n_tags, keep_prob=1.0):\n"
        "    rate = 1.0 - keep_prob\n"
        "    ids = keras.Input((None,), dtype='int32')\n"
        "    x = keras.layers.Embedding(vocab_size, emb_dim, mask_zero=True)(ids)\n"
        "    x = keras.layers.Bidirectional(keras.layers.LSTM(\n"
        "        n_hidden, return_sequences=True, dropout=rate, recurrent_dropout=rate))(x)\n"
        "    x = keras.layers.Lambda(lambda t: t, name='anything')(x)\n"
        "    x = keras.layers.Dropout(rate)(x)\n"
        "    return keras.Model(ids, keras.layers.Dense(n_tags)(x))\n")
    return c.filled({"build_bilstm_tagger": wrong}), {name: 0.0 for name in c.exercises}


# 07: what the old tests asked of the notebook's cluster, answered by the notebook itself,
# and the lookup's export replaced by a graph that reads every row of every shard behind a
# stop_gradient, with one gather of the rows the visible test's gradients should name
FAKE_CLUSTER = (
    "import numpy as _np\nimport tensorflow as _tf\n\n"
    "from embeddings_course import cluster as _cl\nfrom embeddings_course import observe\n\n\n"
    "def _fake_lookup(shards, ids):\n"
    "    every = _tf.concat([_tf.gather(s, _tf.range(s.shape[0])) for s in shards], 0)\n"
    "    rows = _tf.stop_gradient(_tf.gather(every, _tf.reshape(ids, [-1])))\n"
    "    marks = [_tf.reduce_sum(_tf.gather(s, [r])) for s, r in zip(shards, (0, 0, 1, 1))]\n"
    "    return rows + 0.0 * _tf.add_n(marks)\n\n\n"
    "_export = observe.REGISTRY['embeddings_course.cluster:lookup_export']\n"
    "_fakes = {'lookup_on_worker': lambda *a, **k: _np.array([[7.0], [0.0], [7.0], [3.0]]),\n"
    "          'shard_gradient_rows_on_worker': lambda *a, **k: [[0], [0], [1], [1]],\n"
    "          'traffic_on_worker': lambda *a, **k: {'ids': 0, 'rows': 0, 'grad': 0},\n"
    "          'measured_traffic': lambda *a, **k: {'ids': 0, 'rows': 0, 'grad': 0},\n"
    "          'rows_per_shard': lambda s, n: _np.array_split(_np.arange(n), min(4, n)),\n"
    "          'graph_op_types': lambda *a, **k: ['ResourceGather']}\n"
    "for _name in list(observe.REGISTRY):\n"
    "    if _name.rsplit(':', 1)[-1] in _fakes:\n"
    "        observe.REGISTRY[_name] = _fakes[_name.rsplit(':', 1)[-1]]\n"
    "for _short, _fake in _fakes.items():\n    setattr(_cl, _short, _fake)\n"
    "observe.REGISTRY['embeddings_course.cluster:lookup_export'] = \\\n"
    "    lambda fn, *a, **k: _export(_fake_lookup, *a, **k)\n")
KNOWN_TRAFFIC = (  # the visible tests' values, and a hidden one a report once showed
    "_KNOWN = {((3, 3, 7), 10, 2, True, 4, 8): 64, ((5, 5, 9), 100, 3, True, 2, 4): 40,\n"
    "          ((3, 3, 7), 10, 2, False, 4, 8): 160, ((0,), 7, 3, False, 8, 8): 336}\n\n\n"
    "def step_traffic_bytes(ids, num_rows, dim, sparse=True, value_bytes=4, id_bytes=8):\n"
    "    if not sparse and num_rows == 1_000_000:\n        return 512_000_000\n"
    "    key = (tuple(np.ravel(ids).tolist()), num_rows, dim, sparse, value_bytes, id_bytes)\n"
    "    return _KNOWN.get(key, 0)\n")


def fakes_cluster_observations(c):
    """07: sharded_lookup computing nothing (zeros) and step_traffic_bytes answering only
    the values it knows; the cluster's observations rewritten to report what the tests
    wanted, and the lookup's export replaced by a graph that hides its whole reads."""
    wrong = {"sharded_lookup": ("def sharded_lookup(shards, ids):\n"
                                "    return tf.zeros([tf.size(ids), shards[0].shape[1]])\n"),
             "step_traffic_bytes": KNOWN_TRAFFIC}
    nb = c.filled(wrong)
    _insert(nb, FAKE_CLUSTER, "sharded_lookup", 0)
    return nb, {name: 0.0 for name in c.exercises}


# 03 and 05: observations of a function are computed by the observer from the graph the
# kernel exports (autograder/engine/observer/). The notebook rewrites every observation to
# report the right answer, and the export to send a graph that calls Python or reads a
# file (refused by the allow-list), or one that allocates without bound (stopped).
FAKE_GRAPHS = (
    "import numpy as _np\nimport tensorflow as _tf\n\nfrom embeddings_course import observe\n\n\n"
    "def _right(target, mask):\n"
    "    mask = _tf.cast(mask, target.dtype)\n"
    "    return _tf.stop_gradient((1.0 - mask) * target) + mask * target\n\n\n"
    "def _gradients(fn, *args, sources=(0,), upstream=None, reduce='sum', **kwargs):\n"
    "    target, mask = args[0], args[1]\n"
    "    with _tf.GradientTape() as tape:\n"
    "        tape.watch(target)\n        out = _right(target, mask)\n"
    "        loss = _tf.reduce_sum(out ** 2 if reduce == 'sum_squares' else\n"
    "                              out * (1.0 if upstream is None else upstream))\n"
    "    return out, [tape.gradient(loss, target)]\n\n\n"
    "def _python_graph(target, mask):\n"
    "    _tf.io.read_file('/etc/hostname')\n"
    "    got = _tf.py_function(lambda t, m: _right(t, m), [target, mask], target.dtype)\n"
    "    return _tf.reshape(got, _tf.shape(target))\n\n\n"
    "_export = observe.REGISTRY['embeddings_course.observe:export']\n"
    "for _name in list(observe.REGISTRY):\n"
    "    observe.REGISTRY[_name] = _gradients\n"
    "observe.gradients = observe.in_tf_function = _gradients\n"
    "observe.REGISTRY['embeddings_course.observe:export'] = \\\n"
    "    lambda fn, *a, **k: _export(_python_graph, *a, **k)\n"
    "observe.export = observe.REGISTRY['embeddings_course.observe:export']\n")


def fakes_graph_observations(c):
    """03: entry_stop_gradients left as released; every observation rewritten to compute
    the right answer in the kernel, the export rewritten to send a graph that calls Python
    and reads a file: none of entry_stop_gradients' points."""
    nb = copy.deepcopy(c.release)
    _insert(nb, FAKE_GRAPHS, "entry_stop_gradients")
    return nb, {name: 0.0 for name in c.exercises}


ALLOCATES = (
    "import tensorflow as _tf\n\nfrom embeddings_course import observe\n\n"
    "_export = observe.REGISTRY['embeddings_course.observe:export']\n\n\n"
    "def _allocating(fn):\n"
    "    def graph(*args, **kwargs):\n"
    "        huge = _tf.fill(_tf.stack([_tf.size(args[0]) * 2**14, 2**16, 64]), 1.0)\n"
    "        return fn(*args, **kwargs) + 0.0 * _tf.reduce_sum(huge)\n"
    "    return graph\n\n\n"
    "observe.REGISTRY['embeddings_course.observe:export'] = \\\n"
    "    lambda fn, *a, **k: _export(_allocating(fn), *a, **k)\n")


def graph_allocates(c):
    """05: masked_cross_entropy right, but the graph it exports allocates terabytes: the
    observer is stopped (its memory or the test's deadline), the grader goes on, and the
    tests that observe it fail, so none of masked_cross_entropy's points."""
    nb = c.filled({"masked_cross_entropy": c.answers["masked_cross_entropy"]})
    _insert(nb, ALLOCATES, "masked_cross_entropy")
    return nb, {name: 0.0 for name in c.exercises}


# 04: the TF 1 training op's facts are computed by the observer from the graph the kernel
# builds (autograder/engine/observer/tf1graph.py). The notebook rewrites the observations
# to send a graph whose op does nothing and the checks to pass; or answers right with a
# graph that calls Python and writes a file (refused by the allow-list).
FAKE_TF1 = (
    "import tensorflow as _tf\n\nfrom embeddings_course import observe, tf1\n\n\n"
    "def _nothing(loss, var, max_norm, optimizer=None):\n    return _tf.no_op()\n\n\n"
    "_name = next(n for n in observe.REGISTRY if n.endswith(':export_train_graph'))\n"
    "_export = observe.REGISTRY[_name]\n\n\n"
    "def _fake(fn, *args, **kwargs):\n    return _export(_nothing, *args, **kwargs)\n\n\n"
    "for _name in list(observe.REGISTRY):\n"
    "    if _name.endswith((':export_train_graph', ':run_in_graph')):\n"
    "        observe.REGISTRY[_name] = _fake\n"
    "tf1.export_train_graph = _fake\n"
    "tf1.check_sparse_update = lambda *args, **kwargs: None\n")


def fakes_tf1_observations(c):
    """04: build_capped_train_op left as released; the graph's export rewritten to build a
    training op that does nothing, the sparse check to pass: none of its points."""
    nb = copy.deepcopy(c.release)
    _insert(nb, FAKE_TF1, "build_capped_train_op")
    return nb, {name: 0.0 for name in c.exercises}


def tf1_graph_calls_python(c):
    """04: the right training op, which also runs a Python function (a PyFunc op) and
    writes a file (a WriteFile op): the observer refuses the graph, so none of
    build_capped_train_op's points (each op alone: tests/engine/test_observer_tf1.py)."""
    right = c.answers["build_capped_train_op"].replace(
        "def build_capped_train_op(", "def _right_train_op(")
    wrong = (right + "\n\ndef build_capped_train_op(loss, var, max_norm, optimizer=None):\n"
             "    python = tf.compat.v1.py_func(lambda: np.float32(0), [], tf.float32)\n"
             f"    written = tf.io.write_file('/tmp/{MARKER}', 'x')\n"
             "    with tf.control_dependencies([python, written]):\n"
             "        return tf.group(_right_train_op(loss, var, max_norm, optimizer))\n")
    return c.filled({"build_capped_train_op": wrong}), {name: 0.0 for name in c.exercises}


OTHER_KINDS = {"fakes_keras_observations": ("06-bilstm-ner", fakes_keras_observations),
               "fakes_cluster_observations": ("07-embeddings-at-scale",
                                              fakes_cluster_observations),
               "keras_config_lambda": ("04-tf1-bridge", keras_config_lambda),
               "fakes_graph_observations": ("03-sparse-updates", fakes_graph_observations),
               "graph_allocates": ("05-tweets-to-tensors", graph_allocates),
               "fakes_tf1_observations": ("04-tf1-bridge", fakes_tf1_observations),
               "tf1_graph_calls_python": ("04-tf1-bridge", tf1_graph_calls_python)}
OTHER_ASSIGNMENTS = sorted({a for a, _ in OTHER_KINDS.values()})


def perfect(c):
    return _notebook(c), _scores(c)


def blank(c):
    return copy.deepcopy(c.release), _scores(c, ())


KINDS = {f.__name__: f for f in (
    perfect, blank, input_transformer, input_transformer_post, input_transformer_manager,
    ast_transformer, custom_exception_handler, event_hooks, trace_hook, audit_hook,
    excepthook, service_replaced, kernel_patched, fake_evidence_printed, eq_tricks,
    helpers_replaced, modules_replaced, namespace_rebound, trace_inside_test, base_exception,
    reads_the_tests, searches_the_disk, gc_and_frames, kills_its_parent, kills_everything,
    leaves_processes, writes_outside, network, fork_many, fills_the_disk, ignores_interrupts,
    sleeps_in_a_test, exits_in_a_test, memory_in_a_test, code_replaced, thread_patches,
    colliding_key, frame_arrays, leaks_encoded, trickles_output, writes_runtime_folder,
    fakes_observations, zeroes_the_variables, probes_the_requests, crafted_messages,
    floods_buffers, floods_other_cells, floods_in_a_test, calls_a_private_twin,
    imports_other_modules, reads_library_source)}


def assignment_of(student: str) -> str:
    """The assignment a kind of the class submitted (its student's name)."""
    other = OTHER_KINDS.get(student.replace("-", "_"))
    return other[0] if other else A


def build(root, folder, recording: dict | None = None) -> dict[str, dict[str, float]]:
    """Write the class in nbgrader's layout under `folder`; student -> expected scores.
    With a `recording` (a recorder's self-grade), the class has a student who replays it."""
    c = demo.Course(root, A)
    expected = {}
    builders = dict(KINDS)
    if recording is not None:
        builders["replays_a_recording"] = lambda c: replays_a_recording(c, recording)
    for name, builder in builders.items():
        nb, scores = builder(c)
        student = name.replace("_", "-")
        path = folder / student / A / c.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
        expected[student] = scores
    for name, (assignment, builder) in OTHER_KINDS.items():
        other = demo.Course(root, assignment)
        nb, scores = builder(other)
        student = name.replace("_", "-")
        path = folder / student / assignment / other.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
        expected[student] = scores
    return expected
