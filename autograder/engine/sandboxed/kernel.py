"""The grading kernel: ipykernel that also answers the grader's data requests.

Started by the grader (autograder.engine.trusted.session), inside the sandbox, as
`python -m autograder.engine.sandboxed.kernel -f CONNECTION_FILE`. It runs the notebook's cells
as any
kernel does. A cell that starts with `autograder.engine.sandboxed.service.RPC` is not code: it is a
request of the trusted grader (call this function with these inputs, tell me about this
object), answered with data in the execute reply (`autograder.engine.sandboxed.service`). No
test cell,
expected value or verdict ever reaches this process.

Before any student code runs it sets its CPU-time limit and, once its sockets are bound,
gives up writing anywhere but its scratch folders (Landlock, where the Linux kernel has
it): the host folder that holds its sockets stays read-only to it.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import resource
import shutil
import sys

from ipykernel.ipkernel import IPythonKernel

from autograder.engine.sandboxed.service import RPC, Service

WRITABLE = ("/home", "/tmp", "/dev")  # the sandbox's own tmpfs scratch and devices
PRELOAD = "COURSE_GRADE_PRELOAD"  # the modules to load before the first cell, comma-separated


class GradingKernel(IPythonKernel):
    implementation = "course-grade"

    async def do_execute(self, code, silent, store_history=True, user_expressions=None,
                         allow_stdin=False, *, cell_meta=None, cell_id=None):
        if not code.startswith(RPC):
            return await super().do_execute(code, silent, store_history, user_expressions,
                                            allow_stdin, cell_meta=cell_meta, cell_id=cell_id)
        self._allow_stdin = allow_stdin
        service = getattr(self, "_course_service", None)
        if service is None:
            service = self._course_service = Service(self.shell.user_ns, self.raw_input)
        answer = service.handle_request(code[len(RPC):])
        return {"status": "ok", "execution_count": self.shell.execution_count,
                "user_expressions": {}, "payload": [], "course_grade_rpc": answer}


def _boot() -> None:
    cpu = int(os.environ.pop("COURSE_GRADE_CPU_SECONDS", "0") or 0)
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    fonts = os.environ.pop("COURSE_GRADE_MPL_CACHE", "")
    target = os.environ.get("MPLCONFIGDIR")
    if fonts and target and os.path.isdir(fonts) and not os.path.exists(target):
        shutil.copytree(fonts, target)


def restrict_writes(writable=WRITABLE) -> bool:
    """From now on this process and its children write only beneath `writable`
    (Landlock). False where the Linux kernel does not offer Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    create, add_rule, restrict = 444, 445, 446  # the same on x86_64 and aarch64
    abi = libc.syscall(create, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return False
    writes = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
    if abi >= 2:
        writes |= 1 << 13  # REFER: moving files between folders
    if abi >= 3:
        writes |= 1 << 14  # TRUNCATE

    class Ruleset(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    ruleset = Ruleset(writes)
    fd = libc.syscall(create, ctypes.byref(ruleset), ctypes.c_size_t(ctypes.sizeof(ruleset)),
                      ctypes.c_uint32(0))
    if fd < 0:
        return False
    try:
        for path in writable:
            if not os.path.isdir(path):
                continue
            folder = os.open(path, os.O_PATH | os.O_DIRECTORY)
            try:
                rule = PathBeneath(writes, folder)
                if libc.syscall(add_rule, ctypes.c_int(fd), ctypes.c_int(1),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return False
            finally:
                os.close(folder)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return False
        return libc.syscall(restrict, ctypes.c_int(fd), ctypes.c_uint32(0)) == 0
    finally:
        os.close(fd)


def main() -> None:
    _boot()
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance(kernel_class=GradingKernel)
    app.initialize(sys.argv[1:])  # binds the sockets in the runtime folder
    # the course's preload (pyproject.toml: TensorFlow and Keras here), loaded before the
    # first cell, so that their seconds of start-up count against no cell's time limit
    for module in filter(None, os.environ.pop(PRELOAD, "").split(",")):
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the notebook's own import will say what is wrong
            pass
    if os.environ.pop("COURSE_GRADE_SANDBOXED", "") == "1":
        restrict_writes()
    app.start()


if __name__ == "__main__":
    main()
