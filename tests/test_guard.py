"""The grading kernel's guard and sandbox, on a live kernel: test cells run as written,
evidence that cannot be forged from the notebook, what the sandbox lets a kernel see."""

from __future__ import annotations

import dis
import json

import pytest

from autograder import engine, guard, sandbox
from autograder.session import KernelSession, Limits
from conftest import ROOT

IMPORTS = "import numpy as np\nfrom sparse_embeddings import checks"


def test_the_runner_reads_no_global_name():
    """A notebook that rebinds guard's module names cannot change what run_test does."""
    loads = [i.argval for i in dis.get_instructions(guard.run_test)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    assert loads == []


def test_redact_cuts_a_quote_of_a_hidden_test_and_long_messages():
    hidden = ["\nrng = np.random.default_rng(11)\nfor shape, lr in [((3, 4), 0.01)]:\n"]
    quoted = "CheckFailed: w differs; the test was for shape, lr in [((3, 4),  0.01)] ..."
    cut = engine.redact(quoted, hidden)
    assert "((3, 4)" not in cut and "cut by the grader" in cut
    assert engine.redact("CheckFailed: w has shape (2,); expected (3,).", hidden) == \
        "CheckFailed: w has shape (2,); expected (3,)."
    assert len(engine.redact("x" * 5000, hidden)) < 1600


def test_hidden_parts_are_the_blocks_between_the_markers():
    begin, end = guard_markers()
    source = f"visible = 1\n{begin}\nsecret = 2\n{end}\n"
    assert engine.hidden_parts(source) == ["\nsecret = 2\n"]


def guard_markers():
    from autograder.notebooks import HIDDEN_MARKERS

    return HIDDEN_MARKERS


@pytest.fixture(scope="module")
def kernel():
    ok, why = sandbox.available()
    if not ok:
        pytest.fail(f"the sandbox is not available here: {why}")
    session = KernelSession(Limits(cell_timeout=30, memory_mb=2048), use_sandbox=True)
    session.start()
    yield session
    session.stop()


def run_test(session, source, nonce="nonce-1"):
    run = session.run(f"{guard.MAGIC}{json.dumps({'nonce': nonce, 'imports': IMPORTS})}\n"
                      f"{source}")
    evidence = run.reply.get("course_grade", {})
    valid = evidence.get("signature") == guard.signature(session.key, nonce, IMPORTS, source,
                                                         "ok")
    return run, evidence, valid


@pytest.mark.slow
def test_a_passing_test_is_signed_and_a_failing_one_is_not(kernel):
    run, evidence, valid = run_test(kernel, "checks.check_close(np.ones(2), [1.0, 1.0])")
    assert run.status == "ok" and valid and evidence["found"] == []
    run, evidence, valid = run_test(kernel, "checks.check_close(np.ones(2), [1.0, 2.0])")
    assert run.status == "error" and not valid
    assert any("differs" in o.get("evalue", "") for o in run.outputs)


@pytest.mark.slow
def test_tampering_is_undone_before_the_test_and_reported(kernel):
    kernel.run("import sparse_embeddings.checks as c\nc.check_close = lambda *a, **k: None\n"
               "get_ipython().ast_transformers.append(None)\n"
               "import builtins\nbuiltins.AssertionError = Exception")
    run, evidence, valid = run_test(kernel, "checks.check_close(np.ones(2), [1.0, 2.0])")
    assert run.status == "error" and not valid
    assert {"sparse_embeddings.checks.check_close", "IPython ast_transformers",
            "builtins.AssertionError"} <= set(evidence["found"])


@pytest.mark.slow
def test_what_the_kernel_refuses(kernel):
    probe = ("import gc, sys\ncalls = []\n"
             "try:\n    gc.get_objects()\nexcept RuntimeError:\n    print('gc refused')\n"
             "sys.addaudithook(lambda event, args: calls.append(event))\n"
             "compile('1', 'x', 'eval')\nprint('new audit hooks heard', len(calls))")
    text = kernel.run(probe).outputs[0]["text"]
    assert "gc refused" in text and "new audit hooks heard 0" in text
    # while a test runs: no trace function, no other thread's frames
    for source in ("import sys\nsys.settrace(lambda *a: None)",
                   "import sys\nsys._current_frames()"):
        run, _, valid = run_test(kernel, source)
        assert run.status == "error" and not valid, source
        assert "not allowed while grading" in run.outputs[-1].get("evalue", "")


@pytest.mark.slow
def test_the_signature_cannot_be_had_from_the_notebook(kernel):
    """Calling the signing event, or the runner with a fake helper tuple, signs nothing."""
    run = kernel.run("import sys\nholder = []\nsys.audit('course_grade.sign', holder)\n"
                     "import autograder.guard as g\n"
                     "try:\n    r = g.run_test('pass', '', 'n', {}, _o=None)\n"
                     "except TypeError:\n    r = {'signature': ''}\n"
                     "print(holder, repr(r['signature']))")
    assert "[] ''" in run.outputs[0]["text"]


@pytest.mark.slow
def test_the_sandbox_hides_the_machine(kernel):
    probe = ("import os, socket\n"
             f"print(os.getuid(), os.path.exists({str(ROOT / 'solutions')!r}),"
             f" os.path.exists({str(ROOT / 'tests')!r}), os.path.exists('/root/.bashrc'))\n"
             "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
             "except OSError as error:\n    print('network:', type(error).__name__)\n"
             "for path in ('/usr/x', '/etc/x', os.path.expanduser('~/x')):\n"
             "    try:\n        open(path, 'w').write('x')\n        print('wrote', path)\n"
             "    except OSError:\n        print('refused', path)")
    text = kernel.run(probe).outputs[0]["text"]
    assert text.startswith("1000 False False False")
    assert "network: OSError" in text or "network:" in text
    assert "refused /usr/x" in text and "refused /etc/x" in text
    assert "wrote /home/student/x" in text
