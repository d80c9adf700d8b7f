"""Class grading on a real Dask cluster (`course-grade class --scheduler`): a `dask scheduler`
and `dask worker` processes on localhost grade as this machine does, a worker killed while
it grades loses nothing, and a cluster that cannot grade stops in seconds, writing nothing."""

from __future__ import annotations

import json
import re
import shutil
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from support import free_port

from autograder.authoring import demo
from autograder.errors import CourseError
from autograder.grading import classgrade
from autograder.scale import certs
from autograder.scale.dask_cluster import CONFIG, CONNECT_SECONDS, Cluster
from autograder.scale.dask_local import LocalProcesses
from conftest import ROOT

A1, A2 = "01-autodiff", "02-gather-gradients"


def write_class(folder: Path) -> list[tuple[str, str]]:
    """Four students with both assignments (right, blank, half done, a typical mistake),
    and one who ends the kernel in 01 and hands in no 02: 9 submissions."""
    keys = []
    for assignment in (A1, A2):
        c = demo.Course(ROOT, assignment)
        named = [(b.__name__, b) for b in (demo.perfect, demo.blank, demo.partial)]
        named += [(f"mistake{k}", build)
                  for k, (_, build) in enumerate(demo.mistake_builders(c, 1))]
        if assignment == A1:
            named.append(("os-exit", demo.os_exit))
        for student, build in named:
            path = folder / student / assignment / c.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(build(c)[0])
            keys.append((student, assignment))
    return keys + [("os-exit", A2)]  # recorded as "not submitted"


def scores(results) -> dict:
    return {(r.student, r.assignment): ({g: c["score"] for g, c in r.cells.items()}, r.fatal)
            for r in results}


def gradebook_rows(out: Path) -> list[tuple]:
    with sqlite3.connect(out / "gradebook.db") as db:
        return db.execute("SELECT student.id, assignment.name FROM submitted_assignment JOIN "
                          "student ON student.id = submitted_assignment.student_id JOIN "
                          "assignment ON assignment.id = submitted_assignment.assignment_id"
                          ).fetchall()


def dask_processes() -> list:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if re.search(r"\bdask (scheduler|worker)\b", line) or "distributed.cli" in line:
            found.append(p)
    return found


@pytest.fixture(scope="module")
def one_submission(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("one")
    target = folder / "ada" / A1 / "autodiff.ipynb"
    target.parent.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / A1 / "autodiff.ipynb", target)
    return folder


def refused(source: Path, out: Path, address: str, **settings) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(CourseError) as error:
        classgrade.grade_class(ROOT, source, out, [A1], classgrade.Settings(
            scheduler=address, **settings), log=lambda *_: None)
    assert not out.exists(), "a refused run wrote into the class folder"
    return str(error.value), time.monotonic() - started


# --- a cluster that cannot grade: one sentence, in seconds, nothing written ---------------

@pytest.mark.slow
def test_no_scheduler_at_the_address(tmp_path, one_submission):
    certs.make(tmp_path / "certs")
    message, seconds = refused(one_submission, tmp_path / "out",
                               f"tls://127.0.0.1:{free_port()}", cluster_certs=tmp_path / "certs")
    assert message.startswith("No Dask scheduler answers at tls://127.0.0.1:")
    assert "dask scheduler" in message and "\n" not in message
    assert seconds < CONNECT_SECONDS + 10


@pytest.mark.parametrize("option", ["workers", "keep_logs"])
def test_options_for_this_machine_only(tmp_path, one_submission, option):
    message, _ = refused(one_submission, tmp_path / "out", "tcp://127.0.0.1:1",
                         **{option: 2 if option == "workers" else True})
    assert f"leave --{option.replace('_', '-')} out" in message


def other_course(folder: Path) -> Path:
    """The course at another commit: one notebook of 01 changed."""
    for name in ("autograder", "embeddings_course", "solutions"):
        shutil.copytree(ROOT / name, folder / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    for name in ("nbgrader_config.py", "pyproject.toml"):
        shutil.copy(ROOT / name, folder)
    notebook = folder / "solutions" / A1 / "autodiff.ipynb"
    notebook.write_text(notebook.read_text().replace("gradient", "gradient ", 1))
    return folder


@pytest.mark.slow
def test_a_cluster_without_workers_and_workers_that_differ(tmp_path, one_submission):
    other = other_course(tmp_path / "other-course")
    with LocalProcesses(0, tmp_path / "cluster") as cluster:
        mine = {"cluster_certs": cluster.certs}
        message, seconds = refused(one_submission, tmp_path / "out", cluster.address, **mine)
        assert message == (f"The Dask scheduler at {cluster.address} has no worker: start some"
                           f" with `dask worker {cluster.address} --nthreads 1` and the "
                           "course's worker certificate (--tls-cert).")
        assert seconds < CONNECT_SECONDS + 10

        cluster.add_worker("elsewhere", env={"PYTHONPATH": str(other)})
        cluster.wait_for(1)
        message, seconds = refused(one_submission, tmp_path / "out", cluster.address, **mine)
        assert re.search(r"worker tls://127\.0\.0\.1:\d+ has another version of 01-autodiff "
                         r"\(digest \w+, here \w+\)", message), message
        assert seconds < CONNECT_SECONDS + 10
        assert "same course commit" in message

        (other / "embeddings_course" / "checks.py").open("a").write("\n# changed\n")
        cluster.workers[-1].send_signal(signal.SIGTERM)
        cluster.workers[-1].wait(30)
        cluster.add_worker("elsewhere-2", env={"PYTHONPATH": str(other)})
        cluster.wait_for(1)
        message, _ = refused(one_submission, tmp_path / "out", cluster.address, **mine)
        assert "runs other course code" in message

        # a worker that cannot find bubblewrap: refused, unless told to grade without one
        venv_bin = str(Path(sys.executable).parent)
        cluster.workers[-1].send_signal(signal.SIGTERM)
        cluster.workers[-1].wait(30)
        cluster.add_worker("no-bwrap", env={"PATH": venv_bin})
        cluster.wait_for(1)
        message, _ = refused(one_submission, tmp_path / "out", cluster.address, **mine)
        assert "cannot sandbox student code" in message and "--no-sandbox" in message

        # a worker started without the course's Dask settings: graded on, with a note
        cluster.add_worker("defaults", env={"DASK_CONFIG": str(tmp_path / "none.yaml")})
        cluster.wait_for(2)
        said = []
        with Cluster(cluster.address, ROOT, [A1], sandboxed=False, log=said.append,
                     certs_folder=cluster.certs):
            pass
        notes = [line for line in said if "profiler" in line]
        assert len(notes) == 1 and notes[0].startswith("note: 1 worker(s) run Dask's profiler")
        assert str(CONFIG) in notes[0]
    assert not dask_processes()


# --- the same grades as on this machine, and a worker killed while it grades -------------

@pytest.fixture(scope="module")
def class_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    return folder, write_class(folder)


@pytest.fixture(scope="module")
def local_run(class_folder, tmp_path_factory):
    folder, keys = class_folder
    out = tmp_path_factory.mktemp("local") / "out"
    results = classgrade.grade_class(ROOT, folder, out, None, classgrade.Settings(workers=2),
                                     log=print)
    assert {(r.student, r.assignment) for r in results} == set(keys)
    return scores(results)


@pytest.mark.slow
def test_a_class_graded_on_the_cluster_scores_as_on_this_machine(
        class_folder, local_run, tmp_path):
    folder, keys = class_folder
    assert len(keys) >= 9
    out = tmp_path / "out"
    other = other_course(tmp_path / "other-course")
    said = []
    with LocalProcesses(2, tmp_path / "cluster") as cluster:
        def log(line):
            said.append(line)
            if line.startswith("grading on"):  # checked: now a worker of another version
                cluster.add_worker("late", env={"PYTHONPATH": str(other)})

        results = classgrade.grade_class(ROOT, folder, out, None, classgrade.Settings(
            scheduler=cluster.address, cluster_certs=cluster.certs), log=log)
        assert scores(results) == local_run
        late = [line for line in said if "joined with another version" in line]
        assert len(late) == 1 and "grades nothing of this run" in late[0], said
        assert len({sum(s or 0 for s in v[0].values()) for v in local_run.values()}) >= 4
        assert sorted(gradebook_rows(out)) == sorted(keys)
        assert "grades:" in classgrade.report(ROOT, out, results)
        for student, assignment in keys:
            assert (out / "feedback" / student / f"{assignment}.html").exists()
        assert "os-exit" in (out / "grades.csv").read_text()
        crash = next(r for r in results if (r.student, r.assignment) == ("os-exit", A1))
        assert any("the kernel stopped" in n for n in crash.notes), crash.notes
        # a rerun grades nothing that has not changed (without the late worker, which would
        # stop it before it starts)
        cluster.workers[-1].send_signal(signal.SIGTERM)
        cluster.workers[-1].wait(30)
        said.clear()
        classgrade.grade_class(ROOT, folder, out, None, classgrade.Settings(
            scheduler=cluster.address, cluster_certs=cluster.certs), log=said.append)
        assert any(f"{len(keys)} unchanged since the last run" in line for line in said), said
    assert not dask_processes()
    # the workers' course copies went with them; nothing of the class stayed behind
    assert not list((tmp_path / "cluster").rglob("gradebook.db"))


@pytest.mark.slow
def test_a_worker_killed_while_grading_loses_nothing(class_folder, local_run, tmp_path):
    folder, keys = class_folder
    keys = [k for k in keys if k[1] == A1]  # 01 only (five), to keep it short
    out = tmp_path / "out"
    said: list[str] = []
    # workers under a nanny, as `dask worker` starts them by default: the killed worker's
    # nanny starts a fresh one
    with LocalProcesses(2, tmp_path / "cluster", nanny=True) as cluster:
        nanny = psutil.Process(cluster.workers[0].pid)
        victim = next(p for p in nanny.children()
                      if "spawn_main" in " ".join(p.cmdline()))

        def kill_when_grading():
            # once a result is in, each worker holds its next submission; a few seconds
            # later that one is inside a kernel
            while not any(line.startswith("[") for line in said):
                time.sleep(0.2)
            time.sleep(3)
            victim.kill()

        killer = threading.Thread(target=kill_when_grading, daemon=True)
        killer.start()
        results = classgrade.grade_class(ROOT, folder, out, [A1], classgrade.Settings(
            scheduler=cluster.address, cluster_certs=cluster.certs), log=said.append)
        killer.join(5)
        assert not victim.is_running()
    progress = [line for line in said if re.match(r"\[\s*\d+/\d+\]", line)]
    graded = [tuple(re.match(r"\[\s*\d+/\d+\] (\S+) (\S+):", line).groups())
              for line in progress]
    assert sorted(graded) == sorted(keys), "each submission is graded exactly once"
    again = [line for line in said if "graded again on" in line]
    assert len(again) == 1, said
    assert scores(results) == {k: local_run[k] for k in keys}
    assert sorted(gradebook_rows(out)) == sorted(keys)
    stored = [json.loads(p.read_text()) for p in (out / "results").glob("*/*.json")]
    assert len(stored) == len(keys) and not any(s["fatal"] for s in stored)
    assert not dask_processes()
