"""autograder.scale.runner: what every runner does with what comes back (the local pool and
Dask both go through Runner.run)."""

from __future__ import annotations

from autograder.errors import CourseError
from autograder.scale import runner


class Scripted(runner.Runner):
    """Outcomes from a script: job -> the outcomes of its successive starts."""

    def __init__(self, script):
        self.script = {k: list(v) for k, v in script.items()}
        self.queue = []

    def outcomes(self, base, jobs, settings):
        self.queue = list(jobs)
        while self.queue:
            job = self.queue.pop(0)
            yield job, self.script[job.key].pop(0)

    def again(self, job):
        self.queue.append(job)


class Job:
    def __init__(self, key):
        self.key = key


def test_a_stopped_job_is_tried_again_then_recorded_and_errors_cost_only_their_job():
    jobs = [Job(("a",)), Job(("b",)), Job(("c",)), Job(("d",)), Job(("e",))]
    script = {("a",): [{"score": 1}],
              ("b",): [runner.Stopped(1), {"score": 2}],
              ("c",): [runner.Stopped(1), runner.Stopped(2)],
              ("d",): [CourseError("no such notebook")],
              ("e",): [ValueError("boom")]}
    seen = []
    results = Scripted(script).run(None, jobs, None, on_result=lambda j, r: seen.append(j.key))
    assert results[("a",)] == {"score": 1} and results[("b",)] == {"score": 2}
    assert results[("c",)] == {"error": runner.stopped_message(2)}
    assert results[("d",)] == {"error": "no such notebook"}
    assert results[("e",)]["error"] == "the grader failed on it (ValueError: boom)"
    assert sorted(seen) == sorted(j.key for j in jobs) and len(seen) == 5  # once each
