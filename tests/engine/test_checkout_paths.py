"""The grader works wherever the course is checked out (issue 38): from a checkout under
/tmp, in a folder whose name has a space, a warm and a cold kernel start and run a cell,
seeing of the checkout only its Python and packages, and a self-grade of a blank release
scores as it does anywhere.

The checkout is this working tree's files copied to /tmp with its .venv beside them, as
`git clone` and `make install` leave it: the environment's files hard-linked (seconds, no
space), its editable install pointed at the copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow
NOTEBOOK = Path("notebooks") / "04-tf1-bridge" / "tf1_bridge.ipynb"

KERNELS = r"""
import json, os, sys
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits

root = os.getcwd()
probe = f'''import json, os, sys, embeddings_course, sparse_embeddings
root = {root!r}
def writable(path):
    try:
        open(os.path.join(path, 'x'), 'w').close()
        return True
    except OSError:
        return False
print(json.dumps([sys.prefix, [embeddings_course.__file__, sparse_embeddings.__file__],
                  sorted(os.listdir(root)),
                  os.path.exists(os.path.join(root, 'solutions')),
                  writable(sys.prefix), writable('/tmp')]))'''
seen = {}
for how in ("warm", "cold"):
    os.environ["COURSE_GRADE_FORKSERVER"] = "1" if how == "warm" else "0"
    session = KernelSession(Limits(cell_timeout=60), use_sandbox=True)
    session.start()
    try:
        run = session.run(probe)
        seen[how] = [session.warm, run.status, "".join(o.get("text", "") for o in run.outputs)]
    finally:
        session.stop()
print(json.dumps(seen))
"""


def _copy_checkout(into: Path) -> None:
    """This working tree's files (tracked or not ignored) and its .venv, hard-linked."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            source = ROOT / name
            if source.is_file():
                (into / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, into / name)
    else:  # not a git checkout
        shutil.copytree(ROOT, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", "*.pyc", ".*_cache"))
    venv = Path(sys.prefix)
    linked = subprocess.run(["cp", "-al", str(venv), str(into / ".venv")],
                            capture_output=True, text=True)
    if linked.returncode != 0:
        pytest.skip(f"the course's .venv cannot be hard-linked into /tmp here "
                    f"({linked.stderr.strip()})")
    for finder in (into / ".venv").glob("lib/python*/site-packages/__editable__*finder.py"):
        text = finder.read_text().replace(repr(str(ROOT))[:-1], repr(str(into))[:-1])
        finder.unlink()  # a hard link: the original stays as it is
        finder.write_text(text)
    # the library (library/src) is installed editable by a path in a .pth file
    for pth in (into / ".venv").glob("lib/python*/site-packages/__editable__*.pth"):
        text = pth.read_text()
        if str(ROOT) in text:
            pth.unlink()
            pth.write_text(text.replace(str(ROOT), str(into)))


@pytest.fixture(scope="module")
def checkout():
    if not sys.prefix.startswith(str(ROOT)):
        pytest.skip("the course's environment is not the checkout's .venv")
    folder = Path(tempfile.mkdtemp(prefix="course checkout ", dir="/tmp")) / "my course"
    try:
        folder.mkdir()
        _copy_checkout(folder)
        yield folder
    finally:  # the environment's 70,000 links are unlinked in the background (seconds
        # to a minute of disk writes on a busy machine, not this test's own time)
        subprocess.run(["sh", "-c", 'rm -rf -- "$1" >/dev/null 2>&1 &', "sh",
                        str(folder.parent)], check=False)


def test_kernels_and_self_grading_work_from_a_checkout_under_tmp(checkout, tmp_path):
    from autograder.engine.trusted import sandbox

    ok, why = sandbox.available()
    if not ok:
        pytest.fail(f"the sandbox is not available here: {why}")
    python = str(checkout / ".venv" / "bin" / "python")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("COURSE_GRADE_FORKSERVER", None)

    def run(args):
        return subprocess.run([python, *args], cwd=checkout, env=env, capture_output=True,
                              text=True, timeout=600)

    with ThreadPoolExecutor(2) as pool:
        kernels = pool.submit(run, ["-c", KERNELS])
        graded = pool.submit(run, ["-c", "from autograder.cli import grade_main; "
                                         "raise SystemExit(grade_main())", "self",
                                   str(NOTEBOOK)])
        kernels, graded = kernels.result(), graded.result()
    assert kernels.returncode == 0, kernels.stderr[-3000:]
    assert "kernels start cold" not in kernels.stderr, kernels.stderr
    seen = json.loads(kernels.stdout.splitlines()[-1])
    for how, warm in (("warm", True), ("cold", False)):
        started_warm, status, text = seen[how]
        assert (started_warm, status) == (warm, "ok"), (how, seen[how])
        prefix, library, listed, solutions, prefix_writable, tmp_writable = json.loads(text)
        assert prefix == str(checkout / ".venv")
        assert library == [str(checkout / "embeddings_course" / "__init__.py"),
                           str(checkout / "library" / "src" / "sparse_embeddings" /
                               "__init__.py")]
        # of the checkout, only what the kernel needs: no solutions, tests or gradebook
        assert listed == [".venv", "autograder", "embeddings_course", "library"], (how, listed)
        assert not solutions and not prefix_writable and tmp_writable
    assert graded.returncode == 0, graded.stdout + graded.stderr[-3000:]
    report = graded.stdout
    assert "build_capped_train_op            0 / 5   not answered yet" in report, report
    assert "build_bilstm_tagger              0 / 5   not answered yet" in report, report
    assert "total (autograded)              0 / 10" in report, report
