"""The execute step of grading: every cell in a sandboxed grading kernel, scored on evidence.

`SandboxedExecute` replaces nbgrader's `Execute` in the autograde pipeline (nbgrader's own
steps before and after it stay: test cells restored from the gradebook, scores saved to it):

- the cells run one by one in an `autograder.session.KernelSession`: the sandbox, a
  wall-clock limit per cell, a memory and a process limit, an output cap;
- a test cell is sent to the kernel's guarded runner with a fresh nonce; it counts as
  passed only with a valid signature for "ok" from the kernel (autograder.guard), whatever
  the outputs say: a cell without one gets an error output, so nbgrader scores it 0;
- a dead kernel (os._exit, a crash, the memory limit, a cell that would not stop) costs
  only its own cell: a fresh kernel runs the code cells before it again, tests and cells
  that crashed left out, and grading goes on with the next cell;
- what happened (timeouts, crashes, output cut, ordinary cells that raised, tampering the
  guard undid) is written into the notebook's metadata under "course_grade".
"""

from __future__ import annotations

import hmac
import json
import secrets

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer, Unicode

from autograder import guard
from autograder.notebooks import grade_id, is_test
from autograder.session import KernelSession, Limits

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
    timeout = Integer(120, help="seconds a cell may run").tag(config=True)
    memory_mb = Integer(4096, help="memory of the kernel and its children (MB)").tag(
        config=True)
    max_output_kb = Integer(256, help="output kept per cell (kB)").tag(config=True)
    cpu_seconds = Integer(3600, help="CPU time of the kernel (s)").tag(config=True)
    kernel_threads = Integer(0, help="threads for TensorFlow's ops (0: leave)").tag(
        config=True)
    use_sandbox = Bool(True, help="run the kernel in bubblewrap").tag(config=True)
    imports = Unicode("", help="the release's import lines, bound again before each "
                               "test").tag(config=True)

    def preprocess(self, nb, resources):
        limits = Limits(cell_timeout=self.timeout, memory_mb=self.memory_mb,
                        max_output_kb=self.max_output_kb, cpu_seconds=self.cpu_seconds,
                        threads=self.kernel_threads or None)
        findings = {"timeouts": [], "truncated": [], "crashes": [], "cell_errors": [],
                    "tampering": [], "no_evidence": [], "not_run": []}
        code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        crashed: set[int] = set()
        done: list[int] = []
        session = self._start(limits)
        restarts = 0
        try:
            for index in code_cells:
                cell = nb.cells[index]
                if session is None:
                    cell.outputs = [_error_output(
                        "KernelDied", "not run: the kernel kept dying in earlier cells")]
                    findings["not_run"].append(index)
                    continue
                run, nonce = self._run_cell(session, cell)
                cell.outputs = run.outputs
                cell.execution_count = run.reply.get("execution_count")
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
                if is_test(cell):
                    self._judge(session, cell, run, nonce, index, findings)
        finally:
            if session is not None:
                session.stop()
        nb.metadata[FINDINGS] = findings
        return nb, resources

    # -- kernels -------------------------------------------------------------------------
    def _start(self, limits: Limits) -> KernelSession:
        session = KernelSession(limits, use_sandbox=self.use_sandbox)
        session.start()
        return session

    def _restart(self, nb, limits, done, crashed, restarts, findings):
        """A fresh kernel with the state the later cells need: the code cells that ran
        before, tests and crashed cells left out. (None, n) when it keeps dying."""
        while restarts < MAX_RESTARTS:
            restarts += 1
            session = self._start(limits)
            for index in [i for i in done if i not in crashed]:
                run = session.run(nb.cells[index].source)
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
            return session.run(cell.source), ""
        nonce = secrets.token_hex(16)
        header = json.dumps({"nonce": nonce, "imports": self.imports})
        return session.run(f"{guard.MAGIC}{header}\n{cell.source}"), nonce

    # -- evidence ------------------------------------------------------------------------
    def _judge(self, session, cell, run, nonce, index, findings) -> None:
        evidence = run.reply.get("course_grade") or {}
        if evidence.get("found"):
            findings["tampering"].append({"cell": index, "grade_id": grade_id(cell),
                                          "found": [str(f)[:200] for f in evidence["found"]]})
        expected = guard.signature(session.key if session else b"", nonce, self.imports,
                                   cell.source, "ok") if nonce else ""
        passed = (run.status == "ok" and bool(nonce) and
                  hmac.compare_digest(str(evidence.get("signature", "")), expected))
        if passed:
            cell.outputs = [o for o in cell.outputs if o.get("output_type") != "error"]
            return
        if not any(o.get("output_type") == "error" for o in cell.outputs):
            findings["no_evidence"].append({"cell": index, "grade_id": grade_id(cell)})
            cell.outputs.append(_error_output(
                "GradingEvidenceMissing", "the grader got no proof that this test cell ran "
                "as written and raised nothing (was the kernel or IPython changed?)"))
