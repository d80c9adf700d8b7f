"""The grading kernel on a live sandboxed kernel: it answers the grader's requests with data
(autograder.engine.sandboxed.service, autograder.engine.trusted.remote), tests run in the grader
(autograder.engine.trusted.testcells), a cell's deadline holds whatever it prints, and the
sandbox hides
the machine."""

from __future__ import annotations

import time

import numpy as np
import psutil
import pytest
import tensorflow as tf

from autograder.engine.trusted import sandbox
from autograder.engine.trusted import testcells as trusted
from autograder.engine.trusted.remote import Bridge, KernelDied, RemoteError
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits
from conftest import ROOT

pytestmark = pytest.mark.slow
IMPORTS = "import numpy as np\nimport tensorflow as tf\nfrom embeddings_course import checks"


@pytest.fixture(scope="module")
def kernel():
    ok, why = sandbox.available()
    if not ok:
        pytest.fail(f"the sandbox is not available here: {why}")
    session = KernelSession(Limits(cell_timeout=30, memory_mb=2048), use_sandbox=True)
    session.start()
    session.run("import numpy as np\nimport tensorflow as tf\n"
                "def step(variables, grads, lr):\n"
                "    for v, g in zip(variables, grads):\n        v.assign_sub(lr * g)\n"
                "    return variables\n"
                "def tape_of(f, x):\n    with tf.GradientTape() as tape:\n"
                "        tape.watch(x)\n        y = f(x)\n    return tape.gradient(y, x)\n"
                "def fails(x):\n    raise ValueError(f'bad input {x}')\n"
                "class Box:\n    def __init__(self, n):\n        self.items = list(range(n))\n"
                "def grad_of(loss_fn, variables):\n    with tf.GradientTape() as tape:\n"
                "        loss = loss_fn()\n    return tape.gradient(loss, variables)\n"
                "count = 3")
    yield session
    session.stop()


def bridge(session, seconds=30):
    return Bridge(session, time.monotonic() + seconds)


def test_calls_cross_as_data_and_variables_come_back_updated(kernel):
    b = bridge(kernel)
    step = b.request("get", name="step")
    assert type(step).__name__ == "Remote"
    w, v = tf.Variable([1.0, 2.0]), tf.Variable(3.0, dtype=tf.float64)
    out = step([w, v], [tf.constant([1.0, 1.0]), tf.constant(1.0, tf.float64)], 0.5)
    assert out[0] is w and out[1] is v  # the test's own variables, updated in place
    assert w.numpy().tolist() == [0.5, 1.5] and float(v) == 2.5
    assert b.request("get", name="count") == 3
    box = b.request("get", name="Box")(4)
    assert box.items == [0, 1, 2, 3] and len(box.items) == 4


def test_errors_come_back_as_their_kind_with_their_message(kernel):
    fails = bridge(kernel).request("get", name="fails")
    with pytest.raises(ValueError, match="bad input 7"):
        fails(7)
    with pytest.raises(AttributeError):
        _ = bridge(kernel).request("get", name="Box")(1).missing


def test_a_function_of_the_test_is_called_back_with_its_gradient(kernel):
    b = bridge(kernel)
    tape_of, grad_of = b.request("get", name="tape_of"), b.request("get", name="grad_of")
    assert tape_of(lambda t: tf.reduce_sum(t ** 2), tf.constant([1.0, 3.0])) is None  # a value
    a, c = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    grads = grad_of(lambda: tf.reduce_sum(a ** 2) * c, [a, c])
    assert np.allclose(grads[0], [6.0, 12.0]) and np.allclose(grads[1], 5.0)


def test_a_test_cell_runs_in_the_grader_and_its_message_is_the_tests(kernel):
    names = ("step", "count", "absent")  # what the release defines: asked of every test
    ok = trusted.run_test(kernel, "w = tf.Variable([1.0, 2.0])\n"
                          "step([w], [tf.ones(2)], 1.0)\n"
                          "checks.check_close(w, [0.0, 1.0])", IMPORTS, 30, names=names)
    assert ok.status == "ok", ok
    secret = "### BEGIN HIDDEN TESTS\nchecks.check_close(count, 4, hint='say four')\n"
    failed = trusted.run_test(kernel, secret, IMPORTS, 30, names=names)
    assert failed.status == "error" and failed.ename == "CheckFailed"
    assert "Hint: say four" in failed.evalue
    # the kernel never saw the test: nothing of it is in its history
    history = kernel.run("print(sorted(set(In)))").outputs[0]["text"]
    assert "say four" not in history and "check_close" not in history


def test_a_failure_says_whether_validate_would_have_seen_it(kernel):
    """A check that fails in a hidden block is marked hidden (Validate passed that cell);
    one that fails in the visible part is not, and neither is a helper defined visibly
    but called from the hidden block (it counts where it is called)."""
    names = ("count",)
    visible = "checks.check_close(count, 4)\n### BEGIN HIDDEN TESTS\nassert True\n" \
              "### END HIDDEN TESTS\n"
    hidden = "def more():\n    checks.check_close(count, 5)\ncount + 1\n" \
             "### BEGIN HIDDEN TESTS\nmore()\n### END HIDDEN TESTS\n"
    assert trusted.run_test(kernel, visible, IMPORTS, 30, names=names).hidden is False
    run = trusted.run_test(kernel, hidden, IMPORTS, 30, names=names)
    assert run.status == "error" and run.hidden is True


def test_a_callback_costs_a_round_trip_not_a_poll(kernel):
    """The grader waits on the kernel's output and its input requests together: 200 calls
    back into the test take far less than the 10 s that 50 ms of polling each would."""
    kernel.run("def call_many(f, n):\n    return sum(f(i) for i in range(n))")
    call_many = bridge(kernel).request("get", name="call_many")
    started = time.monotonic()
    assert call_many(lambda i: i, 200) == sum(range(200))
    assert time.monotonic() - started < 6


def test_the_watcher_sees_every_process_the_kernel_starts(kernel):
    session = KernelSession(Limits(cell_timeout=20, max_processes=6), use_sandbox=True)
    session.start()
    try:
        run = session.run("import subprocess\n"
                          "procs = [subprocess.Popen(['sleep', '30']) for _ in range(8)]\n"
                          "import time\ntime.sleep(3)")
        assert run.status == "died" and "processes" in run.reason
    finally:
        session.stop()


def test_the_deadline_holds_whatever_the_cell_prints():
    session = KernelSession(Limits(cell_timeout=3), use_sandbox=sandbox.available()[0])
    session.start()
    try:
        started = time.monotonic()
        run = session.run("import sys, time\nwhile True:\n    sys.stdout.write('.')\n"
                          "    sys.stdout.flush()\n    time.sleep(0.05)")
        assert run.status == "timeout" and time.monotonic() - started < 10
        b = Bridge(session, time.monotonic() + 3)
        session.run("def slow():\n    import time\n    while True:\n"
                    "        print('.', end='', flush=True)\n        time.sleep(0.05)")
        started = time.monotonic()
        with pytest.raises(Exception, match="time limit"):
            b.request("get", name="slow")()
        assert time.monotonic() - started < 10
    finally:
        session.stop()


def test_a_dead_kernel_is_reported_as_such(kernel):
    session = KernelSession(Limits(cell_timeout=20), use_sandbox=True)
    session.start()
    try:
        session.run("def die():\n    import os\n    os._exit(3)")
        with pytest.raises(KernelDied):
            bridge(session).request("get", name="die")()
    finally:
        session.stop()


def test_a_kernel_that_answers_nonsense_costs_only_its_own_request(kernel):
    session = KernelSession(Limits(cell_timeout=20), use_sandbox=True)
    session.start()
    try:
        session.run("import autograder.engine.sandboxed.service as s\n"
                    "s.Service.handle_request = lambda self, text: {'ok': 'x' * 120_000_000}")
        started = time.monotonic()
        with pytest.raises(RemoteError, match="did not answer"):
            bridge(session).request("get", name="x")  # the reply is over the size limit: dropped
        assert time.monotonic() - started < 30
    finally:
        session.stop()


def test_the_sandbox_hides_the_machine_and_keeps_writes_in_its_scratch(kernel):
    probe = ("import os, socket, sys\n"
             f"print(os.getuid(), os.path.exists({str(ROOT / 'solutions')!r}),"
             f" os.path.exists({str(ROOT / 'tests')!r}), os.path.exists('/root/.bashrc'))\n"
             "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
             "except OSError as error:\n    print('network:', type(error).__name__)\n"
             "runtime = os.path.dirname(sys.argv[sys.argv.index('-f') + 1])\n"
             "for path in ('/usr/x', '/etc/x', os.path.join(runtime, 'x'),\n"
             "             os.path.expanduser('~/x'), '/tmp/x'):\n"
             "    try:\n        open(path, 'w').write('x')\n        print('wrote', path)\n"
             "    except OSError:\n        print('refused', path)")
    text = kernel.run(probe).outputs[0]["text"]
    assert text.startswith("1000 False False False")
    assert "network:" in text
    assert "refused /usr/x" in text and "refused /etc/x" in text
    assert text.count("refused") == 3, text  # the runtime folder too
    assert "wrote /home/student/x" in text and "wrote /tmp/x" in text


def test_a_test_that_deletes_or_restores_a_notebook_name_changes_the_notebook(kernel):
    """nbgrader's own example course tests that sum_of_squares calls squares by deleting
    squares: a deletion reaches the notebook while the test runs, and putting back the
    notebook's own object restores it; values the test computes stay in the test."""
    kernel.run("def squares(n):\n    return [i * i for i in range(1, n + 1)]\n"
               "def sum_of_squares(n):\n    return sum(squares(n))\nlimit = 3")
    names = ("squares", "sum_of_squares", "limit")
    test = ("orig = squares\ndel squares\ntry:\n    sum_of_squares(1)\n"
            "except NameError:\n    pass\nelse:\n    raise AssertionError('not used')\n"
            "finally:\n    squares = orig\nlimit = 99\n")
    run = trusted.run_test(kernel, test, IMPORTS, 30, names=names)
    assert run.status == "ok", run
    after = kernel.run("print(sum_of_squares(2), limit)").outputs[0]["text"]
    assert after.split() == ["5", "3"]


def test_warm_kernels_start_fast_and_share_nothing(tmp_path):
    """Kernels forked from one fork server (autograder.engine.trusted.forkserver): the second
    starts
    in seconds, and sees none of the first's files, processes or library copy; no kernel
    can read the server's memory, hold a capability, or see another notebook's library."""
    from autograder.engine.trusted import withheld

    library = withheld.library_copy({"rows_changed"}, tmp_path, "autodiff.ipynb")
    limits = Limits(cell_timeout=30)
    first = KernelSession(limits, use_sandbox=True, library=library)
    first.start()
    assert first.warm, "the fork server did not start here: kernels start cold"
    left = first.run("import os, subprocess\n"
                     "for path in ('/home/student/left', '/tmp/left', '/dev/shm/left'):\n"
                     "    open(path, 'w').write('x')\n"
                     "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
                     "from embeddings_course import checks\n"
                     "try:\n    checks.rows_changed(None, None)\n"
                     "except Exception as error:\n    print(type(error).__name__)")
    assert "Withheld" in left.outputs[0]["text"]
    server, libraries = first._server[0], str(first._server[0].libraries)
    started = first._pids()
    first.stop()
    time.sleep(1)
    assert not [pid for pid in started if psutil.pid_exists(pid) and
                psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]

    second = KernelSession(limits, use_sandbox=True)
    began = time.monotonic()
    second.start()
    try:
        assert second.warm and second._server[0] is server
        assert time.monotonic() - began < 8
        probe = second.run(
            "import os, sys\n"
            "print([p for p in ('/home/student/left', '/tmp/left', '/dev/shm/left')\n"
            "       if os.path.exists(p)])\n"
            f"print(os.listdir({libraries!r}))\n"
            "status = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
            "print(int(status['CapEff'], 16), int(status['CapBnd'], 16))\n"
            "mine = {os.readlink('/proc/self')}  # its PID as this /proc numbers it\n"
            "readable = []\n"
            "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
            "    try:\n        open(f'/proc/{pid}/mem', 'rb').read(1)\n"
            "        readable.append(pid)\n"
            "    except PermissionError:\n        pass\n    except OSError:\n"
            "        readable.append(pid) if pid not in mine else None\n"
            "print(readable)\n"
            "print(os.readlink('/proc/self') == str(os.getpid()),\n"
            "      sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[:2])\n"
            f"print([os.statvfs(p).f_flag & 1 for p in ('/dev', {str(server.folder)!r},\n"
            "    os.path.dirname(sys.argv[sys.argv.index('-f') + 1]), '/dev/shm')])\n"
            "print(sum('sleep' in open(f'/proc/{p}/cmdline').read()\n"
            "          for p in filter(str.isdigit, os.listdir('/proc'))))")
        lines = probe.outputs[0]["text"].splitlines()
        # /dev and the server's folder read-only to the kernel (shared by all its kernels),
        # its own runtime folder and /dev/shm writable (until Landlock)
        # its own /proc: its PIDs as it knows them, PID 1 its namespace's reaper
        assert lines == ["[]", "[]", "0 0", "[]", "True [1, 2]", "[1, 1, 0, 0]", "0"], lines
    finally:
        second.stop()


def test_without_a_fork_server_each_kernel_starts_cold_in_its_own_sandbox(monkeypatch):
    """Where a fork server cannot start (no nested user namespaces), or
    COURSE_GRADE_FORKSERVER=0, the kernel is a fresh process in its own bubblewrap sandbox,
    and the session says so."""
    from autograder.engine.trusted import forkserver
    from autograder.engine.trusted import session as session_module

    def refuse(*args, **kwargs):
        raise forkserver.ForkServerError("no nested user namespaces here")

    monkeypatch.setattr(forkserver, "acquire", refuse)
    monkeypatch.setitem(session_module._WARM, "usable", True)
    session = KernelSession(Limits(cell_timeout=30), use_sandbox=True)
    session.start()
    try:
        assert not session.warm and session_module._WARM["usable"] is False
        run = session.run("import os\nprint(os.getuid(), os.getcwd())")
        assert run.outputs[0]["text"] == "1000 /home/student\n"
    finally:
        session.stop()


def test_a_warm_kernel_that_dies_before_it_is_ready_falls_back_to_a_cold_one(
        monkeypatch, capsys):
    """A forked kernel that cannot start (here: its start-up raises) costs nothing but
    seconds: the session starts a cold kernel in its own sandbox, and says why in one line,
    the kernel's own error in it; later kernels of this process start cold."""
    from autograder.engine.trusted import forkserver
    from autograder.engine.trusted import session as session_module

    spawn, fall_back, when = forkserver.ForkServer.spawn, KernelSession._fall_back, {}

    def broken(self, connection_file, env, *rest):
        pid = spawn(self, connection_file, dict(env, COURSE_GRADE_CPU_SECONDS="many"), *rest)
        when["forked"] = time.monotonic()
        return pid

    def noted(self, error):
        when["fell back"] = time.monotonic()
        fall_back(self, error)

    monkeypatch.setattr(forkserver.ForkServer, "spawn", broken)
    monkeypatch.setattr(KernelSession, "_fall_back", noted)
    monkeypatch.setitem(session_module._WARM, "usable", True)
    session = KernelSession(Limits(cell_timeout=30), use_sandbox=True)
    session.start()
    try:
        assert not session.warm and session_module._WARM["usable"] is False
        run = session.run("import os\nprint(os.getuid(), os.getcwd())")
        assert run.outputs[0]["text"] == "1000 /home/student\n"
        # seen dead at once, not after the 120 s a kernel's start may take
        assert when["fell back"] - when["forked"] < 20
    finally:
        session.stop()
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("course-grade: kernels start cold ("), said
    assert "ValueError" in said[0] and "many" in said[0], said


def test_a_kernel_that_cannot_start_at_all_says_what_to_do(monkeypatch):
    """Cold too (here the sandbox shows the kernel no Python): one sentence that names the
    cause, says it is the machine's set-up and what to run; no traceback."""
    from autograder.engine.trusted import session as session_module

    monkeypatch.setenv("COURSE_GRADE_FORKSERVER", "0")
    monkeypatch.setattr(sandbox, "python_binds", lambda library=None: [])
    session = KernelSession(Limits(cell_timeout=30), use_sandbox=True)
    with pytest.raises(session_module.KernelStartError) as failed:
        session.start()
    message = str(failed.value)
    assert message.startswith(session_module.START_FAILED), message
    assert "make doctor" in message and "\n" not in message and "Traceback" not in message
    assert "No such file or directory" in message  # bubblewrap's own words: no Python
    assert session.runtime is None and not session._pids()
