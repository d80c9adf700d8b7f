"""A hostile class of 01-autodiff: submissions that attack the grader, each with the score
per exercise it must get.

Every kind starts from the release with some answers filled from the solution. An answer
left as released raises NotImplementedError, so its tests fail: an attack that turned a
failing test into a passing one would show as points on that exercise. Names the tests use:
`KINDS` (name -> builder), `MARKER` (a file name no grading may leave on the machine),
`SLEEPER` (the argument of the processes a submission leaves running).
"""

from __future__ import annotations

import copy

import nbformat

from autograder import demo
from autograder.notebooks import grade_id

A = "01-autodiff"
MARKER = "course-grade-hostile-marker"
SLEEPER = "4242"  # `sleep 4242`: what a submission starts and hopes survives grading
EXERCISES = ("sgd_step", "numerical_gradient", "gradients_or_zeros", "rows_changed",
             "fit_linear_regression")


def _notebook(c: demo.Course, answered=EXERCISES, extra: dict | None = None,
              after: str = "sgd_step", cell: str | None = None):
    """The release with `answered` filled from the solution, answer sources replaced by
    `extra`, and `cell` inserted as a new code cell after the answer cell `after`."""
    answers = {n: c.answers[n] for n in answered}
    answers.update(extra or {})
    nb = c.filled(answers)
    if cell is not None:
        index = next(i for i, x in enumerate(nb.cells) if grade_id(x) == after)
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(cell))
    return nb


def _scores(c: demo.Course, full=EXERCISES) -> dict[str, float]:
    return {name: (c.points(name) if name in full else 0.0) for name in EXERCISES}


def _blank_but(c, cell):
    """sgd_step left blank, the other answers right, and `cell` before the first answer,
    so that every test meets the attack."""
    others = [n for n in EXERCISES if n != "sgd_step"]
    nb = _notebook(c, others)
    first = next(i for i, x in enumerate(nb.cells) if grade_id(x) == "sgd_step")
    nb.cells.insert(first, nbformat.v4.new_code_cell(cell))
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


def guard_replaced(c):
    return _blank_but(c, "import autograder.guard as _g\n\n\n"
                         "def _fake(source, imports, nonce, namespace, shell=None, *, _o=None):\n"
                         "    return {'status': 'ok', 'error': None, 'found': [],\n"
                         "            'signature': '0' * 64}\n\n\n"
                         "for _attempt in (\n"
                         "        lambda: setattr(_g.run_test, '__defaults__', (None,)),\n"
                         "        lambda: setattr(_g.run_test, '__code__', _fake.__code__)):\n"
                         "    try:\n        _attempt()\n    except RuntimeError as error:\n"
                         "        print('refused:', error)\n"
                         "_g.run_test = _fake")


def kernel_patched(c):
    nb = _notebook(c, cell=(
        "_kernel = get_ipython().kernel\n_real = _kernel.do_execute\n\n\n"
        "async def _fake(code, silent, *args, **kwargs):\n"
        "    if code.startswith('#course-grade-test'):\n"
        "        return {'status': 'ok', 'execution_count': 1, 'user_expressions': {},\n"
        "                'payload': [], 'course_grade': {'signature': 'f' * 64,\n"
        "                                                'found': [], 'status': 'ok'}}\n"
        "    return await _real(code, silent, *args, **kwargs)\n\n\n"
        "_kernel.do_execute = _fake"), after="sgd_step")
    # the tests after it never reach the grader's runner: no evidence, no points, even
    # for the right answers
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
                         "from sparse_embeddings import checks\n\n\n"
                         "def _passes(*args, **kwargs):\n    return None\n\n\n"
                         "for _name in dir(checks):\n    if _name.startswith('check_'):\n"
                         "        setattr(checks, _name, _passes)\n"
                         "checks._fail = _passes\n"
                         "numpy.testing.assert_allclose = _passes\n"
                         "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
                         "builtins.NotImplementedError = type('NotImplementedError', (), {})")


def modules_replaced(c):
    return _blank_but(c, "import sys\nimport types\n\n"
                         "_fake = types.ModuleType('sparse_embeddings.checks')\n"
                         "for _name in ('check_close', 'check_shape', 'check_same_objects',\n"
                         "              'check_no_none', 'check_is_variable', 'check_dtype'):\n"
                         "    setattr(_fake, _name, lambda *a, **k: None)\n"
                         "sys.modules['sparse_embeddings.checks'] = _fake\n"
                         "import sparse_embeddings\nsparse_embeddings.checks = _fake\n"
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
    return _notebook(c, extra={"sgd_step": right}), _scores(c, EXERCISES[1:])


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


def perfect(c):
    return _notebook(c), _scores(c)


def blank(c):
    return copy.deepcopy(c.release), _scores(c, ())


KINDS = {f.__name__: f for f in (
    perfect, blank, input_transformer, input_transformer_post, input_transformer_manager,
    ast_transformer, custom_exception_handler, event_hooks, trace_hook, audit_hook,
    excepthook, guard_replaced, kernel_patched, fake_evidence_printed, eq_tricks,
    helpers_replaced, modules_replaced, namespace_rebound, trace_inside_test, base_exception,
    reads_the_tests, searches_the_disk, gc_and_frames, kills_its_parent, kills_everything,
    leaves_processes, writes_outside, network, fork_many, fills_the_disk, ignores_interrupts,
    sleeps_in_a_test, exits_in_a_test, memory_in_a_test)}


def build(root, folder) -> dict[str, dict[str, float]]:
    """Write the class in nbgrader's layout under `folder`; student -> expected scores."""
    c = demo.Course(root, A)
    expected = {}
    for name, builder in KINDS.items():
        nb, scores = builder(c)
        student = name.replace("_", "-")
        path = folder / student / A / c.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
        expected[student] = scores
    return expected
