"""The execute step of grading: the notebook in a sandboxed kernel, its tests in the grader.

`SandboxedExecute` replaces nbgrader's `Execute` in the autograde pipeline (nbgrader's own
steps before and after it stay: test cells restored from the gradebook, hidden ones
included, scores saved to it):

- the notebook's own cells run one by one in an
`autograder.engine.trusted.session.KernelSession`: the
  sandbox, a wall-clock limit per cell whatever it prints, a memory and a process limit,
  an output cap, and a library without this notebook's answers
  (autograder.engine.trusted.withheld);
- a test cell never enters the kernel: it runs here, in the grader's process
  (`autograder.engine.trusted.testcells`), asking the kernel for the student's objects as data.
  It passes
  when it raises nothing here; its error output is the test's own message;
- a dead kernel (os._exit, a crash, the memory limit, a cell that would not stop) costs
  only its own cell: a fresh kernel runs the code cells before it again, tests and cells
  that crashed left out, and grading goes on with the next cell;
- the whole notebook has `Limits.submission_timeout` seconds (kernel starts, every cell,
  tests and rebuilds included): each cell's deadline is the nearer of its own and the
  submission's, and past it the kernel is stopped, the cells left are not run (their
  tests score 0) and the findings say so;
- what happened (timeouts, crashes, output cut, ordinary cells that raised, the
  submission stopped at its time limit) is written into the notebook's metadata under
  "course_grade".
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Dict, List, Unicode

from autograder.cells import grade_id, is_test, place_of, release_names
from autograder.engine.trusted import seeds
from autograder.engine.trusted import testcells as trusted
from autograder.engine.trusted.cellrun import CellRun
from autograder.engine.trusted.session import KernelSession
from autograder.limits import Limits

FINDINGS = "course_grade"
MAX_RESTARTS = 5  # fresh kernels per notebook, each rebuilding the state


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


def _first_error(outputs) -> str:
    for out in outputs:
        if out.get("output_type") == "error":
            return f"{out.get('ename', '')}: {out.get('evalue', '')}".strip(": ")
    return ""


class SandboxedExecute(NbGraderPreprocessor):
    limits = Dict(help="what the kernel may use: autograder.limits.Limits as a dict "
                       "(default: its defaults)").tag(config=True)
    use_sandbox = Bool(True, help="run the kernel in bubblewrap").tag(config=True)
    imports = Unicode("", help="the release's import lines, run in the grader before "
                               "each test (default: read from the course's release)").tag(
        config=True)
    exercises = List(Unicode(), default_value=None, allow_none=True,
                     help="the notebook's exercises, whose library versions its kernel does "
                          "not get (default: read from the course's release)").tag(config=True)
    kept = List(Unicode(), default_value=[], help="library names the notebook's own cells "
                                                  "use, kept for it").tag(config=True)
    scratch = Unicode("", help="where the library's copies for the sandbox are made").tag(
        config=True)
    names = List(Unicode(), default_value=None, allow_none=True,
                 help="the names the release's own cells define: what a test may take from "
                      "the kernel (default: read from the course's release)").tag(config=True)
    secret = Unicode("", help="the grading run's secret, hex, for the hidden tests' inputs "
                              "(autograder.engine.trusted.seeds; default: a new one for "
                              "each notebook)").tag(config=True)

    def preprocess(self, nb, resources):
        if self.use_sandbox:
            _require_sandbox()
        limits = self._limits = Limits.from_dict(self.limits)
        self._secret = self.secret or seeds.draw()
        self._deadline = time.monotonic() + limits.submission_timeout
        findings = {"timeouts": [], "truncated": [], "crashes": [], "cell_errors": [],
                    "not_run": [], "hidden_failures": [], "stopped": {},
                    "cpu_cores": limits.cpu_cores}
        self._facts(resources)
        trusted.warm_imports(self.imports)  # the tests' modules load while the kernel starts
        code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        crashed: set[int] = set()
        done: list[int] = []
        session = self._start(limits)
        restarts = 0
        try:
            for index in code_cells:
                cell = nb.cells[index]
                if not findings["stopped"] and self._left() <= 0:  # the submission's time
                    findings["stopped"] = self._stopped(index)
                    session = _stop(session)
                if findings["stopped"]:
                    cell.outputs = [_error_output("SubmissionTimeout", "not run: " + self._over())]
                    findings["stopped"]["not_run"] += index != findings["stopped"]["cell"]
                    continue
                if session is None:
                    cell.outputs = [_error_output(
                        "KernelDied", "not run: the kernel kept dying in earlier cells")]
                    findings["not_run"].append(index)
                    continue
                try:
                    run = self._run_cell(session, cell)
                except Exception as error:  # noqa: BLE001 - the grader's own failure on it
                    run = CellRun(status="error", outputs=[_error_output(
                        "GradingError", f"the grader could not run this cell "
                        f"({type(error).__name__}: {str(error)[:300]})")])
                cell.outputs = run.outputs
                cell.execution_count = run.reply.get("execution_count")
                if run.status in ("timeout", "died") and self._left() <= 0:
                    findings["stopped"] = self._stopped(index)  # its deadline: the submission's
                    cell.outputs.append(_error_output("SubmissionTimeout", self._over()))
                    session = _stop(session)
                    continue
                if run.hidden:  # a test that Validate would have passed
                    findings["hidden_failures"].append(grade_id(cell))
                if run.truncated:
                    findings["truncated"].append(index)
                if run.status == "timeout":
                    findings["timeouts"].append(index)
                if run.status == "died":
                    crashed.add(index)
                    findings["crashes"].append({"cell": index, "reason": run.reason})
                    cell.outputs.append(_error_output("KernelDied", run.reason))
                    session.stop()
                    session, restarts = self._restart(nb, limits, done, crashed, restarts,
                                                      findings)
                elif not is_test(cell):
                    done.append(index)
                    if run.status in ("error", "timeout"):
                        findings["cell_errors"].append({"cell": index, "grade_id": grade_id(cell),
                                                        "error": _first_error(run.outputs)})
        finally:
            if session is not None:
                session.stop()
        involved = set(findings["timeouts"] + findings["truncated"] + findings["not_run"] +
                       [item["cell"] for item in findings["crashes"] + findings["cell_errors"]
                        + [findings["stopped"]] if item])
        findings["places"] = {str(i): place_of(nb, i) for i in sorted(involved)}
        nb.metadata[FINDINGS] = findings
        return nb, resources

    # -- the submission's time ----------------------------------------------------------
    def _left(self) -> float:
        """Seconds left of the submission's time limit."""
        return self._deadline - time.monotonic()

    def _timeout(self) -> float:
        """A cell's deadline, in seconds: its own, or what is left of the submission's."""
        return max(0.1, min(self._limits.timeout, self._left()))

    def _stopped(self, index: int) -> dict:
        return {"cell": index, "seconds": self._limits.submission_timeout, "not_run": 0}

    def _over(self) -> str:
        return (f"grading this notebook passed the time limit for a whole submission, "
                f"{self._limits.submission_timeout} s")

    # -- kernels -------------------------------------------------------------------------
    def _facts(self, resources) -> None:
        """The release's imports and exercises, and the library the kernel gets."""
        from autograder.engine.trusted import withheld

        info = resources.get("nbgrader", {}) if isinstance(resources, dict) else {}
        if not self.imports or self.exercises is None or self.names is None:
            release = release_of(str(info.get("assignment", "")), str(info.get("notebook", "")))
            imports, exercises, kept = facts_of(release) if release else ("", [], [])
            self.imports = self.imports or imports
            if self.exercises is None:
                self.exercises, self.kept = exercises, kept
            if self.names is None:
                self.names = release_names(release) if release else []
        names = withheld.withheld_names(self.exercises or [], self.kept)
        self._library = None
        if names:
            folder = Path(self.scratch or _private_scratch()) / "course-grade-libraries"
            folder.mkdir(parents=True, exist_ok=True)
            self._library = withheld.library_copy(
                names, folder, str(info.get("assignment", "")) or "this notebook")

    def _start(self, limits: Limits) -> KernelSession:
        session = KernelSession(limits, use_sandbox=self.use_sandbox,
                                library=getattr(self, "_library", None))
        session.start()
        return session

    def _restart(self, nb, limits, done, crashed, restarts, findings):
        """A fresh kernel with the state the later cells need: the code cells that ran
        before, tests and crashed cells left out. (None, n) when it keeps dying."""
        while restarts < MAX_RESTARTS and self._left() > 0:
            restarts += 1
            session = self._start(limits)
            for index in [i for i in done if i not in crashed]:
                run = session.run(nb.cells[index].source, self._timeout())
                if run.status == "died":
                    crashed.add(index)
                    findings["crashes"].append({"cell": index, "reason": run.reason,
                                                "rebuilding": True})
                    session.stop()
                    break
            else:
                return session, restarts
        return None, restarts

    def _run_cell(self, session: KernelSession, cell):
        if not is_test(cell):
            return session.run(cell.source, self._timeout())
        outcome = trusted.run_test(session, cell.source, self.imports, self._timeout(),
                                   self._limits.max_output_kb * 1024, names=self.names or (),
                                   secret=self._secret)
        run = CellRun(outputs=list(outcome.outputs), status=outcome.status,
                      reason=outcome.reason, hidden=outcome.hidden)
        if outcome.hidden:  # the feedback page says why Validate did not see it
            run.outputs.append(nbformat.v4.new_output(
                "stream", name="stdout", text="A hidden test of this cell failed (Validate "
                                             "runs only the visible ones):\n"))
        if outcome.status != "ok":
            run.outputs.append(_error_output(outcome.ename, outcome.evalue))
        return run


def _require_sandbox() -> None:
    """KernelStartError, in one sentence saying what to do, where no sandbox can be had
    (nbgrader's own autograde: `course-grade class` has checked before it starts)."""
    from autograder.engine.trusted import sandbox
    from autograder.engine.trusted.session import KernelStartError

    ok, why = sandbox.available()
    if not ok:
        raise KernelStartError(
            f"The course grades each student's code in a sandbox, and {why}: install it, or "
            "set c.SandboxedExecute.use_sandbox = False in nbgrader_config.py to grade "
            "without one (student code then runs as you, with your files)")


@functools.cache
def _private_scratch() -> str:
    """A folder of this process's own (mode 0700, removed at exit) for the library's
    copies, where the caller gave none (nbgrader's own autograde): never a shared, known
    path in /tmp that another account could fill first."""
    folder = tempfile.mkdtemp(prefix="course-grade-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _stop(session: KernelSession | None) -> None:
    if session is not None:
        session.stop()


def release_of(assignment: str, notebook: str):
    """The course's release of `notebook` (the formgrader's Autograde button, where the
    engine passes nothing), or None."""
    from autograder import course
    from autograder.cells import read_notebook

    try:
        root = course.find_root(Path(__file__).resolve().parents[2])
        return read_notebook(root / course.RELEASE_DIR / assignment / f"{notebook}.ipynb")
    except Exception:  # noqa: BLE001 - no release at hand: tests see no imports
        return None


def facts_of(release) -> tuple[str, list[str], list[str]]:
    """(imports, exercises, library names its own cells use) of a release notebook."""
    from autograder.cells import is_answer, nbgrader_meta, release_imports
    from autograder.engine.trusted import withheld

    exercises = [grade_id(c) for c in release.cells if is_answer(c) and grade_id(c)]
    own = [c.source for c in release.cells if c.cell_type == "code" and not nbgrader_meta(c)]
    return release_imports(release), exercises, sorted(withheld.names_used(own))
