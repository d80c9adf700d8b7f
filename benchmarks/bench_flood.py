"""How much of the grader's memory a kernel can fill with messages (issue 38).

A kernel is untrusted, and the grader (a trusted process, outside every limit of the
sandbox) reads what it sends. This grades floods and an honest cell and prints, for each,
how much the grader's memory grew while it ran:

- `session` (default): one `KernelSession` per kind, in this process (the grader: what a
  grading worker does for one cell), sandboxed where the sandbox can be had; a warm-up
  cell, then the kind's cell, this process's memory sampled every 5 ms (VmRSS, and
  RssAnon: what the queues and Python's objects take, not the libraries mapped);
- `class`: a class of one per kind (01-autodiff, every answer right, the kind's cell
  after the first answer) graded by `course-grade class` with one worker; the RSS of the
  grader's processes (this one and every descendant outside the sandbox: the worker)
  summed every 20 ms, and the student's score.

Kinds (the kernel's memory stays flat in all: one buffer, sent without copies):

- honest: a cell that prints a line;
- buffers: 200 messages with the same 24 MB buffer, each signed afresh, for this cell;
- other-cells: 200 such messages for a cell that does not exist;
- shell-stdin: 100 replies on shell and 100 input requests on stdin, 24 MB each, for no
  cell (the grader reads shell only for the reply, stdin only in a test's requests);
- multipart: one message of 60 parts of 24 MB (1.4 GB) for this cell.

Measure the code as it was by pointing PYTHONPATH at a checkout of it (the script itself
uses nothing new), outside /tmp (the sandbox has a /tmp of its own). The kernels import
the course from where this venv's editable install points, so that checkout's sandbox must
show its packages there too (issue 38's "before" bound them at /work/main/<package>, a
two-line change to its sandbox.command):

    .venv/bin/python benchmarks/bench_flood.py [--mode session|class|both] [--kinds ...]
    git worktree add /work/before <commit>
    PYTHONPATH=/work/before .venv/bin/python benchmarks/bench_flood.py --label before

Prints a table and writes JSON (benchmarks/results/flood.json by default; with an
existing file of another --label, both labels are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):  # else the code measured is the one PYTHONPATH names
    sys.path.insert(0, str(HERE))
sys.path.append(str(HERE / "tests"))  # tests/hostile.py: the class's notebooks

import psutil  # noqa: E402

import autograder  # noqa: E402

CODE = Path(autograder.__file__).resolve().parents[1]
MB = 2**20

_SEND = ("_k = get_ipython().kernel\n_parent = _k.get_parent()\n"
         "_nobody = _k.session.msg_header('execute_request')\n"
         "_buf = bytes(24 * 2**20)\n")
CELLS = {
    "honest": "print('hello')\n_total = sum(range(1000))",
    "buffers": _SEND + "for _ in range(200):\n"
                       "    _k.session.send(_k.iopub_socket, 'display_data', {'data': {},\n"
                       "                    'metadata': {}}, parent=_parent, buffers=[_buf])",
    "other-cells": _SEND + "for _ in range(200):\n"
                           "    _k.session.send(_k.iopub_socket, 'stream', {'name': 'stdout',\n"
                           "                    'text': ''}, parent={'header': _nobody,\n"
                           "                    'msg_id': _nobody['msg_id']}, buffers=[_buf])",
    "shell-stdin": _SEND + "_ident = _k._parent_ident['shell']\n"
                           "for _ in range(100):\n"
                           "    _k.session.send(_k.shell_stream, 'execute_reply', {},\n"
                           "                    parent={'header': _nobody}, ident=_ident,\n"
                           "                    buffers=[_buf])\n"
                           "    _k.session.send(_k.stdin_socket, 'input_request', {},\n"
                           "                    parent={'header': _nobody}, ident=_ident,\n"
                           "                    buffers=[_buf])",
    "multipart": _SEND + "_k.session.send(_k.iopub_socket, 'display_data', {'data': {},\n"
                         "                'metadata': {}}, parent=_parent, buffers=[_buf] * 60)",
}
SENT_MB = {"honest": 0, "buffers": 200 * 24, "other-cells": 200 * 24, "shell-stdin": 200 * 24,
           "multipart": 60 * 24}


def own_memory() -> tuple[int, int]:
    """(VmRSS, RssAnon) of this process, in bytes."""
    found = {}
    with open("/proc/self/status", "rb") as status:
        for line in status:
            key, _, value = line.partition(b":")
            if key in (b"VmRSS", b"RssAnon"):
                found[key] = int(value.split()[0]) * 1024
    return found.get(b"VmRSS", 0), found.get(b"RssAnon", 0)


class Sampler:
    """The peak of `measure()` (a tuple of byte counts), taken every `interval` s."""

    def __init__(self, measure, interval: float):
        self.measure, self.interval = measure, interval
        self.base = measure()
        self.peak = self.base
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._done.wait(self.interval):
            now = self.measure()
            self.peak = tuple(max(a, b) for a, b in zip(self.peak, now, strict=True))

    def stop(self) -> tuple:
        self._done.set()
        self._thread.join()
        return tuple((p - b) / MB for p, b in zip(self.peak, self.base, strict=True))


def session_kind(kind: str, timeout: int) -> dict:
    from autograder.engine.trusted import sandbox
    from autograder.engine.trusted.session import KernelSession
    from autograder.limits import Limits

    session = KernelSession(Limits(cell_timeout=timeout, memory_mb=4096),
                            use_sandbox=sandbox.available()[0])
    session.start()
    try:
        session.run("import sys\nx = 1")  # warm-up: the first messages, the first reply
        time.sleep(0.5)
        sampler = Sampler(own_memory, 0.005)
        started = time.monotonic()
        run = session.run(CELLS[kind])
        seconds = time.monotonic() - started
        rss, anon = sampler.stop()
        after = session.run("print('still here')") if run.status != "died" else None
    finally:
        session.stop()
    return {"kind": kind, "grew_rss_mb": round(rss), "grew_anon_mb": round(anon),
            "status": run.status, "reason": run.reason, "seconds": round(seconds, 1),
            "next_cell": after.status if after else "(kernel stopped)",
            "said": " ".join(str(o.get("text", "")).strip() for o in run.outputs
                             if "course-grade" in str(o.get("text", "")))[:200]}


def grader_processes() -> tuple[int, int]:
    """(summed RSS of this process and its descendants outside the sandbox, the largest
    one's RSS), in bytes."""
    me = psutil.Process()
    total, largest = 0, 0
    stack = [me]
    while stack:
        process = stack.pop()
        try:
            if process.pid != me.pid and process.name().startswith("bwrap"):
                continue  # the sandbox: kernels and the fork server, not the grader's reading
            rss = process.memory_info().rss
            total, largest = total + rss, max(largest, rss)
            stack += process.children()
        except psutil.Error:
            continue
    return total, largest


def class_kind(kind: str, timeout: int, work: Path) -> dict:
    import hostile
    import nbformat

    from autograder.authoring import demo
    from autograder.grading import classgrade
    from autograder.limits import Limits

    c = demo.Course(CODE, hostile.A)
    nb, _ = hostile._perfect_with(c, CELLS[kind]) if kind != "honest" else hostile.perfect(c)
    folder = work / kind
    path = folder / "submitted" / "student" / hostile.A / c.name
    path.parent.mkdir(parents=True)
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    settings = classgrade.Settings(workers=1, force=True,
                                   limits=Limits(cell_timeout=timeout, memory_mb=4096))
    sampler = Sampler(grader_processes, 0.02)
    started = time.monotonic()
    results = classgrade.grade_class(CODE, folder / "submitted", folder / "out", [hostile.A],
                                     settings, log=lambda _: None)
    seconds = time.monotonic() - started
    total, largest = sampler.stop()
    result = results[0]
    return {"kind": kind, "peak_sum_mb": round((sampler.peak[0]) / MB),
            "grew_sum_mb": round(total), "peak_worker_mb": round(sampler.peak[1] / MB),
            "score": result.score, "max_score": result.max_score,
            "seconds": round(seconds, 1), "notes": list(result.notes)[:3]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("session", "class", "both"), default="session")
    parser.add_argument("--kinds", nargs="*", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--timeout", type=int, default=60, help="seconds per cell (60)")
    parser.add_argument("--label", default="after", help="what the code is (after)")
    parser.add_argument("--out", default=str(HERE / "benchmarks" / "results" / "flood.json"))
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    report = {"label": args.label, "code": str(CODE), "machine": platform.node(),
              "cores": os.cpu_count(), "session": [], "class": []}
    print(f"code measured: {CODE} ({args.label})")
    if args.mode in ("session", "both"):
        print("\none KernelSession per kind, this process's growth while the cell ran")
        print(f"{'kind':<12} {'sent MB':>8} {'RSS +MB':>8} {'anon +MB':>9} {'s':>6}  status")
        for kind in args.kinds:
            row = session_kind(kind, args.timeout)
            row["sent_mb"] = SENT_MB[kind]
            report["session"].append(row)
            print(f"{kind:<12} {row['sent_mb']:>8} {row['grew_rss_mb']:>8} "
                  f"{row['grew_anon_mb']:>9} {row['seconds']:>6}  {row['status']}"
                  f"{': ' + row['reason'] if row['reason'] else ''}", flush=True)
    if args.mode in ("class", "both"):
        work = Path(tempfile.mkdtemp(prefix="bench-flood-"))
        try:
            print("\na class of one per kind (01-autodiff, all answers right), one worker")
            print(f"{'kind':<12} {'peak MB':>8} {'+MB':>6} {'worker MB':>10} {'score':>10} "
                  f"{'s':>6}")
            for kind in args.kinds:
                row = class_kind(kind, args.timeout, work)
                report["class"].append(row)
                print(f"{kind:<12} {row['peak_sum_mb']:>8} {row['grew_sum_mb']:>6} "
                      f"{row['peak_worker_mb']:>10} "
                      f"{row['score']:>4g}/{row['max_score']:<5g} {row['seconds']:>6}  "
                      f"{' | '.join(row['notes'])[:160]}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        honest = next((r for r in report["class"] if r["kind"] == "honest"), None)
        if honest:
            for row in report["class"]:
                row["above_honest_mb"] = row["peak_sum_mb"] - honest["peak_sum_mb"]
            print("peak above the honest class of one: " + ", ".join(
                f"{r['kind']} {r['above_honest_mb']:+d} MB" for r in report["class"]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = {}
    if out.exists():
        try:
            kept = json.loads(out.read_text())
        except ValueError:
            kept = {}
    kept = kept if isinstance(kept, dict) and "label" not in kept else {}
    kept[args.label] = report
    out.write_text(json.dumps(kept, indent=1))
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
