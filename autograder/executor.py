"""nbgrader preprocessors for class grading: limits that keep one notebook from stopping the
batch, and the findings a student is told about.

`GuardedExecute` is nbgrader's `Execute` with three more limits:
- memory: a watchdog stops the kernel when its memory (with its children's) passes
  `memory_mb`; the cell gets an error saying so;
- output: a cell keeps at most `max_output_kb` of output; the rest is dropped as it arrives;
- a dead kernel (`os._exit`, a crash, the memory limit) no longer aborts the notebook: the
  cell where it died and every later code cell get an error output, so their tests score 0
  and the cells before keep their scores.
The per-cell time limit is nbgrader's own `Execute.timeout` (interrupt, then go on).

`CollectFindings` runs after it: it takes the guard cells (autograder.sandbox) out of the
notebook and writes what happened into the notebook's metadata under "course_grade".
"""

from __future__ import annotations

import json
import threading

import psutil
from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Integer

from autograder.sandbox import MARKER, REPORT_PREFIX

FINDINGS = "course_grade"


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


def _output_size(out: NotebookNode) -> int:
    if out.get("output_type") == "stream":
        return len(out.get("text", ""))
    return len(json.dumps(out.get("data", {}))) + len(json.dumps(out.get("traceback", [])))


class GuardedExecute(Execute):
    memory_mb = Integer(4096, help="stop the kernel when it uses more memory (MB)").tag(
        config=True)
    max_output_kb = Integer(256, help="keep at most this much output per cell (kB)").tag(
        config=True)
    poll_seconds = 0.05

    def preprocess(self, nb, resources=None, km=None):
        self._findings = {"timeouts": [], "truncated": [], "died": None, "memory": None}
        self._dead = None
        self._watch_stop = threading.Event()
        self._out_bytes = {}
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            self._watch_stop.set()
        resources[FINDINGS] = self._findings
        return nb, resources

    # -- memory watchdog -------------------------------------------------------------
    async def async_start_new_kernel_client(self, *args, **kwargs):
        kc = await super().async_start_new_kernel_client(*args, **kwargs)
        provisioner = getattr(self.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        pid = getattr(process, "pid", None) or getattr(provisioner, "pid", None)
        if pid:
            threading.Thread(target=self._watch, args=(pid,), daemon=True).start()
        return kc

    # nbclient's sync wrapper is bound to its own coroutine: bind it to this one
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _watch(self, pid: int) -> None:
        limit = self.memory_mb * 1024 * 1024
        try:
            kernel = psutil.Process(pid)
        except psutil.Error:
            return
        while not self._watch_stop.wait(self.poll_seconds):
            try:
                processes = [kernel, *kernel.children(recursive=True)]
                used = sum(p.memory_info().rss for p in processes)
            except psutil.Error:
                return
            if used > limit:
                self._findings["memory"] = {"limit_mb": self.memory_mb,
                                            "used_mb": round(used / 2**20)}
                for p in reversed(processes):
                    try:
                        p.kill()
                    except psutil.Error:
                        pass
                return

    # -- output cap ------------------------------------------------------------------
    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
        if out is None:
            return out
        used = self._out_bytes.get(cell_index, 0) + _output_size(out)
        self._out_bytes[cell_index] = used
        if used > self.max_output_kb * 1024:
            if outs and outs[-1] is out:  # the output just appended: drop it
                outs.pop()
            if cell_index not in self._findings["truncated"]:
                self._findings["truncated"].append(cell_index)
                outs.append(NotebookNode(
                    output_type="stream", name="stdout",
                    text=f"\n[course-grade: output beyond {self.max_output_kb} kB dropped]\n"))
        return out

    # -- a dead kernel ends the run, not the batch --------------------------------------
    def preprocess_cell(self, cell, resources, index):
        if self._dead is not None:
            if cell.cell_type == "code":
                cell.outputs = [_error_output(
                    "KernelDied", "not run: the kernel had stopped in an earlier cell")]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._dead = index
            memory = self._findings["memory"]
            reason = (f"the kernel used more than {memory['limit_mb']} MB of memory and was "
                      "stopped" if memory else
                      "the kernel died (os._exit, a crash, or the process was killed)")
            self._findings["died"] = {"cell": index, "reason": reason}
            cell.outputs = [*cell.get("outputs", []), _error_output("KernelDied", reason)]
            return cell, resources
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and out.get("ename") == "CellTimeoutError":
                self._findings["timeouts"].append(index)
        return cell, resources


class CollectFindings(NbGraderPreprocessor):
    """Takes the guard cells out and stores what the grader found in the metadata."""

    def preprocess(self, nb, resources):
        findings = dict(resources.get(FINDINGS, {}))
        restored = []
        guard_errors = []
        kept = []
        # Cell numbers in findings count the guard cells; re-number them for the student.
        new_index = {}
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and cell.source.startswith(MARKER):
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "stream":
                        for line in out.get("text", "").splitlines():
                            if line.startswith(REPORT_PREFIX):
                                restored.append(json.loads(line[len(REPORT_PREFIX):]))
                    elif out.get("output_type") == "error" and out.get("ename") != "KernelDied":
                        guard_errors.append(f"{out.get('ename')}: {out.get('evalue')}")
                continue
            new_index[index] = len(kept)
            kept.append(cell)
        nb.cells = kept
        renumber = lambda i: new_index.get(i, i)  # noqa: E731
        findings["timeouts"] = [renumber(i) for i in findings.get("timeouts", [])]
        findings["truncated"] = [renumber(i) for i in findings.get("truncated", [])]
        if findings.get("died"):
            findings["died"] = {**findings["died"], "cell": renumber(findings["died"]["cell"])}
        findings["restored"] = restored
        findings["guard_errors"] = guard_errors
        nb.metadata[FINDINGS] = findings
        return nb, resources
