"""Where the engine's jobs run: one interface, with retries and errors handled once.

A `Runner` grades a list of `submission.Job`s and calls `on_result(job, result)` in this
process as each result arrives (this process stays the one writer of the class's
files). `LocalRunner` runs them in a pool of worker processes on this machine;
`autograder.scale.dask_cluster.Cluster` runs them as tasks on a Dask cluster. Each implements
`outcomes` (what came back for each job: a result, or the exception that took its place)
and `again` (run a job once more); `Runner.run` turns outcomes into results the same way
for both: a job whose process stopped (out of memory, killed) is tried again until it
has started `TRIES` times, and a grader error costs only its own job.
"""

from __future__ import annotations

import abc
import concurrent.futures as futures
import multiprocessing
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from autograder.engine.trusted import submission
from autograder.errors import CourseError

TRIES = 2  # starts of one job: the first, and one more after its process stopped


class Stopped(Exception):
    """The process grading a job stopped (out of memory, killed) before it finished."""

    def __init__(self, starts: int):
        super().__init__(f"stopped after {starts} start(s)")
        self.starts = starts


def stopped_message(starts: int) -> str:
    return (f"the process grading it stopped {starts} times (out of memory, or killed): "
            "it was not graded")


class Runner(abc.ABC):
    def run(self, base: Path, jobs: list[submission.Job], settings: submission.Settings,
            on_result=None) -> dict:
        """Grade `jobs` with the generated course folder `base`; job key -> result."""
        results: dict = {}
        for job, outcome in self.outcomes(base, jobs, settings):
            result = self._result(job, outcome)
            if result is None:  # tried again: its outcome comes later
                continue
            results[job.key] = result
            if on_result is not None:
                on_result(job, result)
        return results

    def _result(self, job: submission.Job, outcome) -> dict | None:
        if isinstance(outcome, Stopped):
            if outcome.starts < TRIES:
                self.again(job)
                return None
            return {"error": stopped_message(outcome.starts)}
        if isinstance(outcome, CourseError):
            return {"error": str(outcome)}
        if isinstance(outcome, BaseException):  # the grader failed on this job only
            return {"error": f"the grader failed on it ({type(outcome).__name__}: {outcome})"}
        return outcome

    @abc.abstractmethod
    def outcomes(self, base: Path, jobs: list[submission.Job],
                 settings: submission.Settings) -> Iterator[tuple[submission.Job, object]]:
        """(job, result dict or exception) as each job finishes, jobs given to `again`
        included."""

    @abc.abstractmethod
    def again(self, job: submission.Job) -> None:
        """Run `job` once more (its process stopped)."""


class LocalRunner(Runner):
    """A pool of `workers` spawned processes on this machine, each with a private copy of
    the course folder (submission.worker_course). A process that dies breaks its pool: the
    jobs not finished there go to a fresh pool."""

    def __init__(self, root: Path, workers: int = 1, keep: Path | None = None):
        self.root, self.workers, self.keep = root, max(1, workers), keep
        self._queue: list[submission.Job] = []
        self._starts: dict[tuple, int] = {}

    def outcomes(self, base, jobs, settings):
        workdir = Path(tempfile.mkdtemp(prefix="course-grade-", dir=self.keep))
        context = multiprocessing.get_context("spawn")
        self._queue = list(jobs)
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                with futures.ProcessPoolExecutor(
                        min(self.workers, len(batch)), mp_context=context,
                        initializer=submission.worker_init,
                        initargs=(str(base), str(self.root), str(workdir), settings)) as pool:
                    pending = {}
                    for job in batch:
                        self._starts[job.key] = self._starts.get(job.key, 0) + 1
                        pending[pool.submit(submission.grade_in_worker, job,
                                            settings.secret)] = job
                    for done in futures.as_completed(pending):
                        job = pending[done]
                        try:
                            yield job, done.result()
                        except futures.process.BrokenProcessPool:
                            yield job, Stopped(self._starts[job.key])
                        except Exception as error:  # noqa: BLE001 - mapped by Runner.run
                            yield job, error
        finally:
            if self.keep is None:
                shutil.rmtree(workdir, ignore_errors=True)

    def again(self, job):
        self._queue.append(job)
