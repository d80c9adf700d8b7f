"""The secret a grading run draws its hidden tests' randomness from (issue 37).

A hidden test seeds every random draw with `checks.hidden_seed(41)` rather than `41`: with
no secret set, that is the literal (the solution notebook run top to bottom, Validate,
the release); while the grader runs a test cell, it is a seed made from the literal and
the run's secret. Each grading run draws its own secret (`draw`: 32 bytes of
`os.urandom`), so the hidden inputs a submission sees at one grading (and can print,
raise into a report or record) are not the inputs of the next.

One secret per run: `submission.Settings` draws it when made, and each run makes one
(`course-grade class`, `course-grade self`, `autograder.grading.autograde`, the mutant
harness); the runner hands it to the process that grades, with each job (a local
worker's pipe, or the grading cluster's TLS connection to its workers: with the job, not
with the worker's start, so a worker kept from an earlier run never grades with that
run's secret); the executor gets it as a setting (nbgrader's configuration, in memory),
and `installed` puts it into the course's library module named by `seeds` in
pyproject.toml while a test cell runs here. nbgrader's own autograde (the formgrader's
button), given none, draws one per notebook.

It lives in the grading processes' memory only: never in an environment variable (every
process the grader starts inherits those, and a kernel graded with `--no-sandbox` runs as
the grader's user, who may read `/proc/PID/environ`), never in a file, never in a message
to the kernel, which runs no test and so never calls `hidden_seed`. A kernel graded with
`--no-sandbox` could still read the grader's memory where Linux lets a process trace its
parent (`kernel.yama.ptrace_scope` 0): that mode is for code you trust.
"""

from __future__ import annotations

import contextlib
import importlib
import os

from autograder import course


def draw() -> str:
    """A new secret, as hex."""
    return os.urandom(32).hex()


def installed(secret: str):
    """A context in which the course's hidden tests draw from `secret` (the `seeds`
    module's `hidden_seeds`); no secret, or a course without `seeds`: the literals."""
    module = course.facts().seeds
    if not secret or not module:
        return contextlib.nullcontext()
    return importlib.import_module(module).hidden_seeds(bytes.fromhex(secret))
