"""The hidden tests' inputs, drawn from a secret of each grading run (issue 37,
autograder.engine.trusted.seeds, `checks.hidden_seed`): other at every run, the literal
without one, and the secret nowhere the student's kernel can read it, sandboxed or not."""

from __future__ import annotations

import re

import pytest

from autograder import course
from autograder.cells import grade_id, read_notebook
from autograder.engine.trusted import sandbox, seeds, submission
from autograder.engine.trusted import testcells as trusted
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits
from conftest import ROOT
from embeddings_course import checks

IMPORTS = "import numpy as np\nfrom embeddings_course import checks"


def test_each_run_draws_other_hidden_seeds_and_none_gives_the_literal():
    first, second = submission.Settings(), submission.Settings()
    assert re.fullmatch("[0-9a-f]{64}", first.secret) and first.secret != second.secret
    assert first.secret not in repr(first)  # a settings object printed shows no secret
    assert checks.hidden_seed(41) == 41  # the solution run top to bottom, Validate
    drawn = {}
    for settings in (first, second, first):
        with seeds.installed(settings.secret):
            drawn.setdefault(settings.secret, []).append(
                [checks.hidden_seed(n) for n in (41, 42, 7)])
    (a, again), (b,) = drawn[first.secret], drawn[second.secret]
    assert a == again  # one run: the same seed for the same literal, every test cell
    assert a != b and len(set(a)) == 3  # another run or another literal: another seed
    assert all(0 <= s < 2 ** 31 for s in a + b)  # NumPy, TensorFlow and Keras take them
    assert checks.hidden_seed(41) == 41  # only while the grader runs a test
    with seeds.installed(""):
        assert checks.hidden_seed(41) == 41


# Run in the kernel: every 64-digit hex string it can find in its environment, in the
# environment and command line of every process it can see, and in its home's and /tmp's
# files (sandboxed: its own; unsandboxed, the user's home is left out); and one it writes
# into its home itself, to show the search finds one.
PROBE = """
import os, re, secrets
_hex = re.compile(rb"[0-9a-f]{64}")
_found, _places = set(), 0
open(os.path.expanduser("~/planted.txt"), "w").write("planted " + secrets.token_hex(32))

def _look(data):
    global _places
    _places += 1
    _found.update(m.decode() for m in _hex.findall(data))

for key, value in os.environ.items():
    _look(f"{key}={value}".encode())
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for name in ("environ", "cmdline"):
        try:
            _look(open(f"/proc/{pid}/{name}", "rb").read())
        except OSError:
            pass
_look(open(os.path.expanduser("~/planted.txt"), "rb").read())
for top in [os.path.expanduser("~"), "/tmp"] if WALK else []:  # unsandboxed: the user's
    for folder, _, files in os.walk(top):
        for name in files:
            try:
                _look(open(os.path.join(folder, name), "rb").read(5_000_000))
            except OSError:
                pass
print(_places, " ".join(sorted(_found)))
"""


def test_every_hidden_test_draws_its_inputs_from_the_run_s_secret():
    """No hidden test of any notebook has inputs that are the same at every grading: each
    hidden block seeds a generator with `checks.hidden_seed` and draws from it (so what a
    submission records at one grading is worth nothing at the next)."""
    fixed = []
    for assignment in course.assignments(ROOT):
        for path in course.solution_notebooks(ROOT, assignment):
            for cell in read_notebook(path).cells:
                for block in submission.hidden_parts(cell.source):
                    rng = r"np\.random\.default_rng\(checks\.hidden_seed\(\d+\)\)"
                    named = re.search(rf"(\w+) = {rng}\n", block)
                    if not (re.search(rf"{rng}\.\w+\(", block) or named and re.search(
                            rf"\b{named.group(1)}\.\w+\(", block)):
                        fixed.append(f"{assignment} {grade_id(cell)}")
    assert not fixed, fixed


@pytest.mark.slow
@pytest.mark.parametrize("use_sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_the_secret_never_reaches_the_kernel(use_sandbox):
    """A test cell run with the run's secret (in this process, the grader) draws from it,
    and puts it in no environment variable; the kernel started beside it, sandboxed or
    with --no-sandbox (which reads every process of its user), finds it nowhere."""
    if use_sandbox and not sandbox.available()[0]:
        pytest.fail("the sandbox is not available here: " + sandbox.available()[1])
    secret = seeds.draw()
    with seeds.installed(secret):
        want = checks.hidden_seed(41)
    assert want != 41
    session = KernelSession(Limits(cell_timeout=60), use_sandbox=use_sandbox)
    session.start()
    try:
        test = (f"assert checks.hidden_seed(41) == {want}\n"
                "import os\n"
                f"assert not [k for k, v in os.environ.items() if {secret[:40]!r} in v]\n")
        run = trusted.run_test(session, test, IMPORTS, 60, secret=secret)
        assert run.status == "ok", run
        assert trusted.run_test(session, test, IMPORTS, 60, secret=seeds.draw()).status \
            == "error"  # another run's secret: other seeds
        probe = session.run(f"WALK = {use_sandbox}\n" + PROBE, 60)
        assert probe.status == "ok", probe.outputs
        text = "".join(out.get("text", "") for out in probe.outputs)
        places, *found = text.split()
        assert int(places) > 20 and found, text[:500]  # it looked, and finds a planted one
        assert secret not in found
    finally:
        session.stop()
