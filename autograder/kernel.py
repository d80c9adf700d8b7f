"""The grading kernel: ipykernel with test cells run by `autograder.guard.run_test`.

Started by the grader (autograder.session), inside the sandbox, as
`python -m autograder.kernel -f CONNECTION_FILE`. Before any student code runs it reads
its evidence key from the file named by COURSE_GRADE_KEY_FILE and deletes the file, sets
its CPU-time limit, imports what the tests use, and installs the guard.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys

from ipykernel.ipkernel import IPythonKernel

from autograder import guard


class GradingKernel(IPythonKernel):
    implementation = "course-grade"

    async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                         allow_stdin=False, *, cell_meta=None, cell_id=None):
        if not code.startswith(guard.MAGIC):
            return await super().do_execute(code, silent, store_history, user_expressions,
                                            allow_stdin, cell_meta=cell_meta, cell_id=cell_id)
        header, _, source = code.partition("\n")
        info = json.loads(header[len(guard.MAGIC):])
        self.shell.execution_count += 1
        run_test, originals = self._course_grade
        try:
            result = run_test(source, info["imports"], info["nonce"], self.shell.user_ns,
                              self.shell, _o=originals)
        except BaseException as error:  # noqa: BLE001 - the grader always replies
            result = {"status": "error", "error": error, "found": [], "signature": ""}
        reply = {"status": "ok", "execution_count": self.shell.execution_count - 1,
                 "user_expressions": {}, "payload": [],
                 "course_grade": {"signature": result["signature"], "found": result["found"],
                                  "status": result["status"]}}
        if result["status"] != "ok":
            error = result["error"]
            if error is None:
                ename, evalue = "GradingTampered", "; ".join(result["found"][-1:])
            else:
                ename, evalue = type(error).__name__, str(error)
            traceback = [f"{ename}: {evalue}"]
            if error is not None:
                import traceback as tb_module

                traceback = tb_module.format_exception(type(error), error, error.__traceback__)
            content = {"ename": ename, "evalue": evalue, "traceback": traceback}
            self.session.send(self.iopub_socket, "error", content,
                              parent=self.get_parent("shell"), ident=self._topic("error"))
            reply.update(status="error", **content)
        return reply


def _boot() -> bytes:
    key_file = os.environ.pop("COURSE_GRADE_KEY_FILE")
    with open(key_file) as handle:
        key = bytes.fromhex(handle.read().strip())
    os.unlink(key_file)
    cpu = int(os.environ.pop("COURSE_GRADE_CPU_SECONDS", "0") or 0)
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    fonts = os.environ.pop("COURSE_GRADE_MPL_CACHE", "")
    target = os.environ.get("MPLCONFIGDIR")
    if fonts and target and os.path.isdir(fonts) and not os.path.exists(target):
        shutil.copytree(fonts, target)
    return key


def main() -> None:
    key = _boot()
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance(kernel_class=GradingKernel)
    app.initialize(sys.argv[1:])
    # what the tests use, imported before any student code, so the guard keeps its originals
    import numpy.testing  # noqa: F401

    import sparse_embeddings.checks  # noqa: F401
    import sparse_embeddings.tf1  # noqa: F401

    # the runner as it is now: a notebook that rebinds guard.run_test changes nothing
    app.kernel._course_grade = (guard.run_test, guard.install(key, app.shell))
    del key
    app.start()


if __name__ == "__main__":
    main()
