"""What one submission's kernel may use: the one object every part of grading passes on.

`course-grade class` and `self`, the local pool, Dask workers, nbgrader's executor
(autograder.engine.trusted.executor, through its `limits` setting) and the kernel's session
(autograder.engine.trusted.session) all read the same `Limits`. Its fields are the commands'
options (`add_limit_options`: `--cell-timeout` is `cell_timeout`; `Limits.from_args`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from autograder.errors import CourseError

DEFAULT_CELL_TIMEOUT = 120  # seconds, where the course's nbgrader_config names none
# seconds for all of a submission's cells, tests and kernel starts: the slowest notebook of
# the course (06) runs in about 33 s on 2 cores, and 600 s leaves room for a machine
# several times slower and busy
DEFAULT_SUBMISSION_TIMEOUT = 600


@dataclass(frozen=True)
class Limits:
    cell_timeout: int | None = None  # seconds of wall-clock time per cell (None: the course's)
    memory_mb: int = 4096  # the kernel and everything it started
    max_output_kb: int = 256  # output kept per cell
    cpu_seconds: int = 3600  # CPU time of the kernel process (RLIMIT_CPU)
    max_processes: int = 64  # processes in the kernel's tree
    scratch_mb: int = 512  # the sandbox's writable home
    max_received_mb: int = 64  # bytes a cell's kernel may send the grader, every message
    grader_memory_mb: int = 384  # growth of the grader's own memory while a cell runs
    kernel_threads: int | None = None  # TF_NUM_INTRAOP_THREADS / OMP_NUM_THREADS (None: leave)
    cpu_cores: float | None = None  # most cores the kernel may use (None: its equal weight
    #   beside other kernels, no cap; autograder.engine.trusted.cpushare)
    submission_timeout: int = DEFAULT_SUBMISSION_TIMEOUT  # seconds for a whole notebook

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

    @classmethod
    def from_args(cls, args) -> Limits:
        """The limits given on a command line parsed with `add_limit_options`."""
        return cls(**{item.name: getattr(args, item.name) for item in fields(cls)
                      if hasattr(args, item.name)})

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Limits:
        known = {item.name for item in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def add_limit_options(parser, cell_timeout: int | None = None, memory_mb: int = 4096) -> None:
    """The options of `course-grade class`, `demo` and `self`: one per field a user sets."""
    add = parser.add_argument
    course = "the course's Execute.timeout"
    add("--cell-timeout", type=int, default=cell_timeout,
        help=f"seconds a cell may run (default: {cell_timeout or course})")
    add("--memory-mb", type=int, default=memory_mb,
        help=f"memory a submission's kernel may use (default {memory_mb})")
    add("--max-output-kb", type=int, default=256, help="output kept per cell (default 256)")
    add("--kernel-threads", type=int, default=None,
        help="CPU threads for TensorFlow's ops in each kernel (default: cores / workers; "
             "TF_NUM_INTRAOP_THREADS or OMP_NUM_THREADS set already win)")
    add("--cpu-seconds", type=int, default=3600,
        help="CPU time a submission's kernel may use (default 3600)")
    add("--cpu-cores", type=float, default=None,
        help="most cores a submission's kernel may use, even beside idle ones (default: no "
             "cap; kernels that compete get equal shares)")
    add("--max-received-mb", type=int, default=64,
        help="bytes a cell's kernel may send the grader, in MB, every message counted "
             "(default 64); past it the kernel is stopped")
    add("--grader-memory-mb", type=int, default=384,
        help="growth of the grader's own memory while a cell runs, in MB (default 384); "
             "past it the kernel is stopped")
    add("--submission-timeout", type=int, default=DEFAULT_SUBMISSION_TIMEOUT,
        help="seconds a whole submission may take, every cell and test included (default "
             f"{DEFAULT_SUBMISSION_TIMEOUT}); past it the cells left do not run")
