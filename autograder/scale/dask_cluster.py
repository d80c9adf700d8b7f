"""Grading a class on a Dask distributed cluster (`course-grade class --scheduler ADDRESS`).

The engine's jobs become Dask tasks. The instructor's process:

1. connects to the scheduler with the course's client certificate, once it has seen that
   the scheduler asks for one (`certs`), and asks every worker what it runs (`_probe`):
   the course's code and each assignment must have the instructor's digests, and the
   sandbox must be there; any difference stops the run in seconds, before anything is
   written;
2. packs the worker course (the gradebook without students, the source folders without
   notebooks: `submission.worker_course`) into one archive sent once to each worker, since no
   shared file system is assumed;
3. submits one task per submission, carrying the submission's text; each task grades with
   `submission.grade_one` in a private course copy on its worker, in a grading process the
   worker starts once (away from the worker's own threads), and returns the result as data;
4. records each result as it arrives (`on_result`): this process stays the one writer of
   the class gradebook.

When a worker dies, the scheduler hands its tasks to other workers. A ledger on the
scheduler counts how often each submission started: the second start grades it again (on
another worker), a third does not, and the submission is recorded with the reason. A
result reaches `on_result` once per submission, whatever happened on the cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import multiprocessing
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path

from autograder import course
from autograder.engine.trusted import sandbox, submission
from autograder.errors import CourseError
from autograder.scale import certs
from autograder.scale.runner import TRIES, Runner, Stopped, stopped_message

CONNECT_SECONDS = 10  # to reach the scheduler, and again for a first worker to be there
CONFIG = Path(__file__).resolve().parents[1] / "dask.yaml"  # Dask settings for grading workers


# ---------------------------------------------------------------------------------------
# What a machine runs: the same on the instructor's machine and on every worker
# ---------------------------------------------------------------------------------------

def fingerprint(root: Path, assignments: list[str]) -> dict:
    """Digests of the course's code (grader and library packages, as this process imports
    them) and of each assignment."""
    code = hashlib.sha256()
    for package in ("autograder", *course.facts(root).library):
        folder = Path(importlib.util.find_spec(package).origin).resolve().parent
        for path in sorted(folder.rglob("*.py")):
            code.update(path.relative_to(folder.parent).as_posix().encode() + b"\0"
                        + path.read_bytes())
    return {"code": code.hexdigest()[:16],
            "assignments": {a: course.assignment_digest(root, a) if (
                root / course.SOURCE_DIR / a).is_dir() else "missing" for a in assignments}}


def _worker_root() -> Path:
    return course.find_root(Path(__file__).resolve().parent)


def _probe(assignments: list[str], dask_worker=None) -> dict:
    """Run on each worker by `client.run`: what this worker would grade with."""
    import dask

    return {"host": socket.gethostname(), "cpus": os.cpu_count() or 1,
            "profiler": dask.config.get("distributed.worker.profile.enabled", True),
            "threads": dask_worker.state.nthreads, "python": sys.version.split()[0],
            "sandbox": sandbox.available(), **fingerprint(_worker_root(), assignments)}


def differences(address: str, theirs: dict, mine: dict) -> list[str]:
    """Sentences saying how a worker's course differs from the instructor's."""
    said = []
    if theirs["code"] != mine["code"]:
        said.append(f"worker {address} runs other course code (digest {theirs['code']}, "
                    f"here {mine['code']})")
    for name, digest in mine["assignments"].items():
        if theirs["assignments"].get(name) != digest:
            said.append(f"worker {address} has another version of {name} (digest "
                        f"{theirs['assignments'].get(name)}, here {digest})")
    return said


# ---------------------------------------------------------------------------------------
# On a worker
# ---------------------------------------------------------------------------------------

_ON_WORKER: dict = {"lock": threading.Lock(), "courses": {}, "fingerprints": {}}


def _course_copy(bundle: bytes, bundle_id: str, settings: submission.Settings):
    """This worker process's copy of the worker course sent as `bundle`, and the process
    that grades in it (made once per run): grading runs outside the Dask worker's process,
    so it does not share that process's GIL with the event loop (they still share the
    machine's cores: see dask.yaml)."""
    courses = _ON_WORKER["courses"]
    if bundle_id not in courses:
        import concurrent.futures as futures

        from distributed import get_worker

        folder = Path(get_worker().local_directory) / "course-grade" / bundle_id
        shutil.rmtree(folder, ignore_errors=True)
        course_dir = folder / "course"
        course_dir.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as archive:
            archive.extractall(course_dir, filter="data")
        course.write_config(_worker_root(), course_dir)  # this machine's course config
        os.environ[course.ROOT_VARIABLE] = str(_worker_root())  # the grading process's
        pool = futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"),
            initializer=submission.worker_init_for, initargs=(str(course_dir), str(folder),
                                                          settings))
        courses[bundle_id] = (folder, pool)
    return courses[bundle_id]


def _grade_task(bundle: bytes, bundle_id: str, ledger: list, expected: dict,
                job: submission.Job, settings: submission.Settings, threads: dict) -> dict:
    """One submission, graded on whichever worker the scheduler chose."""
    from distributed import get_worker
    from distributed.utils import sync

    worker = get_worker()
    address = worker.address
    names = sorted(expected["assignments"])
    key = tuple(names)
    if key not in _ON_WORKER["fingerprints"]:
        _ON_WORKER["fingerprints"][key] = fingerprint(_worker_root(), names)
    if differences(address, _ON_WORKER["fingerprints"][key], expected):
        return {"wrong_course": address}
    # the ledger, through the worker's own connection (its certificate is a worker's)
    entry = [*ledger, "/".join(job.key)]
    starts = sync(worker.loop, worker.scheduler.get_metadata, keys=entry, default=0) + 1
    sync(worker.loop, worker.scheduler.set_metadata, keys=entry, value=starts)
    if starts > TRIES:
        return {"error": stopped_message(TRIES), "starts": starts}
    if not settings.limits.kernel_threads:
        settings = replace(settings, limits=replace(
            settings.limits, kernel_threads=threads.get(socket.gethostname(), 1)))
    # One grading at a time per worker process: each has its own kernel
    with _ON_WORKER["lock"]:
        for _ in range(2):
            _, pool = _course_copy(bundle, bundle_id, settings)
            try:
                with _children_allowed():
                    # the run's secret goes with each job: the process may be older
                    future = pool.submit(submission.grade_in_worker, job, settings.secret)
                result = future.result()
                break
            except BrokenProcessPool:  # the grading process died: a fresh one, once
                folder, _ = _ON_WORKER["courses"].pop(bundle_id)
                shutil.rmtree(folder, ignore_errors=True)
                result = {"error": stopped_message(2)}
    result.update(starts=starts, worker=address)
    return result


@contextlib.contextmanager
def _children_allowed():
    """A worker under a Dask nanny is a daemonic process, which multiprocessing forbids to
    start children; the grading process ends with its parent anyway
    (`submission.worker_init_for`)."""
    config = multiprocessing.current_process()._config
    daemon = config.get("daemon")
    config["daemon"] = False
    try:
        yield
    finally:
        if daemon is not None:
            config["daemon"] = daemon


def _forget(bundle_id: str, dask_worker=None) -> None:
    """Run on each worker at the end: its copy of the course goes."""
    found = _ON_WORKER["courses"].pop(bundle_id, None)
    if found:
        found[1].shutdown(cancel_futures=True)
        shutil.rmtree(found[0], ignore_errors=True)


# ---------------------------------------------------------------------------------------
# On the instructor's machine
# ---------------------------------------------------------------------------------------

def pack(base: Path, root: Path) -> bytes:
    """The worker course of the class folder `base`, as a gzipped tar archive."""
    with tempfile.TemporaryDirectory(prefix="course-grade-pack-") as tmp:
        course_dir = submission.worker_course(base, Path(tmp), root)
        (course_dir / course.CONFIG_NAME).unlink()  # each worker writes its own
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for path in sorted(course_dir.rglob("*")):
                archive.add(path, arcname=path.relative_to(course_dir).as_posix(),
                            recursive=False)
        return buffer.getvalue()


class Cluster(Runner):
    """A connection to a Dask scheduler whose workers were checked to grade as this
    machine would. Raises CourseError, in one sentence, when they would not."""

    def __init__(self, address: str, root: Path, assignments: list[str], sandboxed: bool,
                 log=print, timeout: float = CONNECT_SECONDS, certs_folder: Path | None = None,
                 insecure: bool = False):
        self.address, self.root, self.log = address, root, log
        self.sandboxed = sandboxed
        self.expected = fingerprint(root, assignments)
        started = time.monotonic()
        # with the course's certificate, to a scheduler that asks for one (or `insecure`)
        self.client = certs.connect(address, certs_folder, insecure, timeout, log)
        try:
            self.workers = self._check(max(1.0, timeout - (time.monotonic() - started)))
        except BaseException:
            self.client.close()
            raise

    def _check(self, wait: float) -> dict:
        try:
            self.client.wait_for_workers(1, timeout=wait)
        except Exception:
            raise CourseError(f"The Dask scheduler at {self.address} has no worker: start "
                              f"some with `dask worker {self.address} --nthreads 1` and the "
                              "course's worker certificate (--tls-cert).") from None
        answers = self.client.run(_probe, sorted(self.expected["assignments"]),
                                  on_error="return")
        problems = []
        for address, info in sorted(answers.items()):
            if isinstance(info, BaseException):
                problems.append(f"worker {address} cannot run the course's grader "
                                f"({type(info).__name__}: {info}); install the course there "
                                "as on this machine")
                continue
            problems += differences(address, info, self.expected)
            ok, why = info["sandbox"]
            if self.sandboxed and not ok:
                problems.append(f"worker {address} cannot sandbox student code ({why}); "
                                "install bubblewrap there, or pass --no-sandbox")
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise CourseError(f"Not grading on {self.address}: {problems[0]}{more}. Every "
                              "worker needs the same course commit as this machine.")
        hosts: dict[str, list[dict]] = {}
        for info in answers.values():
            hosts.setdefault(info["host"], []).append(info)
        self.threads = {host: max(1, infos[0]["cpus"] // len(infos))
                        for host, infos in hosts.items()}
        busy = [a for a, info in answers.items() if info["threads"] > 1]
        if busy:
            self.log(f"note: {len(busy)} worker(s) run several threads; each grades one "
                     "submission at a time (start workers with --nthreads 1 --nworkers N)")
        sampled = [a for a, info in answers.items() if info.get("profiler")]
        if sampled:
            self.log(f"note: {len(sampled)} worker(s) run Dask's profiler, which takes CPU "
                     f"from the kernels: start workers with DASK_CONFIG={CONFIG}")
        self.log(f"grading on {self.address}: {len(answers)} worker(s) on {len(hosts)} "
                 "machine(s), each with this course's version")
        return answers

    def close(self) -> None:
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def outcomes(self, base: Path, jobs: list[submission.Job], settings: submission.Settings):
        """Each job as a task on the cluster (runner.Runner: `run` calls this)."""
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        bundle = pack(base, self.root)
        bundle_id = hashlib.sha256(bundle).hexdigest()[:16]
        run_id = uuid.uuid4().hex[:12]
        ledger = ["course-grade", run_id]
        data = self.client.scatter(bundle, broadcast=True, hash=False)
        checked = set(self.workers)
        shown_wrong: set[str] = set()
        pending: dict = {}
        serial = iter(range(10 ** 9))

        def submit(job, only=None):
            future = self.client.submit(
                _grade_task, data, bundle_id, ledger, self.expected, job, settings,
                self.threads, key=f"course-grade-{run_id}-{next(serial)}", pure=False,
                workers=sorted(only) if only else None, allow_other_workers=False)
            pending[future] = job
            return future

        stream = as_completed([submit(job) for job in jobs], loop=self.client.loop)
        self._again = lambda job: stream.add(submit(job))
        try:
            for future in stream:
                job = pending.pop(future)
                try:
                    result = future.result()
                except KilledWorker:  # the scheduler gave up before our ledger did
                    yield job, Stopped(self.client.get_metadata([*ledger, "/".join(job.key)],
                                                                0))
                    continue
                except Exception as error:  # noqa: BLE001 - mapped by Runner.run
                    yield job, error
                    continue
                if result.get("wrong_course"):
                    wrong = result["wrong_course"]
                    checked.discard(wrong)
                    if wrong not in shown_wrong:
                        shown_wrong.add(wrong)
                        self.log(f"worker {wrong} joined with another version of the course;"
                                 " it grades nothing of this run")
                    if not checked:
                        raise CourseError("No worker with this course's version is left on "
                                          f"{self.address}; the rest of the class was not "
                                          "graded (run again to grade it).")
                    stream.add(submit(job, only=checked))
                    continue
                if result.get("worker"):  # it runs this course's version (a nanny's
                    checked.add(result["worker"])  # fresh worker has a new address)
                if result.get("starts", 1) > 1 and not result.get("error"):
                    self.log(f"{job.student} {job.assignment}: graded again on "
                             f"{result['worker']}, since the worker grading it stopped")
                yield job, result
        finally:
            self.client.cancel(list(pending))
            try:
                self.client.run(_forget, bundle_id, on_error="ignore")
                self.client.set_metadata(ledger, None)
            except Exception:  # the cluster went away: nothing left there to tidy
                pass

    def again(self, job: submission.Job) -> None:
        self._again(job)
