"""What one submission's kernel may use: the one object every part of grading passes on.

`course-grade class` and `self`, the local pool, Dask workers, nbgrader's executor
(autograder.engine.executor, through its `limits` setting) and the kernel's session
(autograder.engine.session) all read the same `Limits`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from autograder.errors import CourseError

DEFAULT_CELL_TIMEOUT = 120  # seconds, where the course's nbgrader_config names none


@dataclass(frozen=True)
class Limits:
    cell_timeout: int | None = None  # seconds of wall-clock time per cell (None: the course's)
    memory_mb: int = 4096  # the kernel and everything it started
    max_output_kb: int = 256  # output kept per cell
    cpu_seconds: int = 3600  # CPU time of the kernel process (RLIMIT_CPU)
    max_processes: int = 64  # processes in the kernel's tree
    scratch_mb: int = 512  # the sandbox's writable home
    kernel_threads: int | None = None  # TF_NUM_INTRAOP_THREADS / OMP_NUM_THREADS (None: leave)

    def check(self) -> Limits:
        """Itself, or CourseError naming the command-line option of a value below 1."""
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and value < 1:
                raise CourseError(f"--{item.name.replace('_', '-')} must be at least 1 "
                                  f"(got {value}).")
        return self

    @property
    def timeout(self) -> int:
        return self.cell_timeout or DEFAULT_CELL_TIMEOUT

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Limits:
        known = {item.name for item in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})
