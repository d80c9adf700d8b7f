"""A Dask scheduler and workers on this machine, as separate processes: what tests,
benchmarks and an instructor trying `course-grade class --scheduler` start by hand, with
certificates of a CA made for them (`certs`), as the README starts a cluster.
Grading on them is autograder.scale.dask_cluster's work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from autograder import processes
from autograder.errors import CourseError
from autograder.scale import certs
from autograder.scale.dask_cluster import CONFIG


class LocalProcesses:
    """`dask scheduler` and `workers` x `dask worker --nthreads 1`, started on localhost as an
    instructor would start them by hand; `stop()` ends them all. With `secure` (the
    default), each has its certificate from `certs` (a CA made for this cluster, `self.certs`),
    and `security` is a client's; without, they use plain tcp:// and admit anyone."""

    def __init__(self, workers: int, folder: Path, nanny: bool = False,
                 env: dict | None = None, secure: bool = True):
        self.env = dict(env or {})  # variables for every process, e.g. another DASK_CONFIG
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.certs = self.folder / "certs" if secure else None
        if secure:
            certs.make(self.certs)
        else:  # the course's settings require TLS
            self.env.setdefault("DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "False")
        self.security = certs.client_security(self.certs) if secure else None
        self.dask = str(Path(sys.executable).parent / "dask")
        self.nanny = nanny
        self.processes: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        try:
            self.address = self._scheduler()
            for n in range(workers):
                self.add_worker(f"w{n}")
            if workers:
                self.wait_for(workers)
        except BaseException:
            self.stop()
            raise

    def _start(self, args: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep
               + os.environ.get("PATH", ""), "TF_CPP_MIN_LOG_LEVEL": "3",
               "DASK_CONFIG": str(CONFIG), **self.env, **(env or {})}
        process = subprocess.Popen([self.dask, *args], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=self.folder, env=env)
        log.close()
        self.processes.append(process)
        return process

    def _scheduler(self) -> str:
        info = self.folder / "scheduler.json"
        info.unlink(missing_ok=True)
        process = self._start(["scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                               "--scheduler-file", str(info), *self._tls("scheduler")],
                              "scheduler")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if info.exists():
                try:
                    return json.loads(info.read_text())["address"]
                except (ValueError, KeyError):
                    pass
            if process.poll() is not None:
                break
            time.sleep(0.2)
        raise CourseError("The Dask scheduler did not start: see "
                          f"{self.folder / 'scheduler.log'}")

    def add_worker(self, name: str, env: dict | None = None) -> subprocess.Popen:
        """One more `dask worker` (`env`: variables that differ from this process's)."""
        process = self._start(
            ["worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
             "--no-dashboard", "--dashboard-address", "127.0.0.1:0", "--name", name,
             "--local-directory", str(self.folder / name),
             "--nanny" if self.nanny else "--no-nanny", *self._tls("worker")], name, env)
        self.workers.append(process)
        return process

    def wait_for(self, count: int) -> None:
        """Until `count` workers are connected."""
        from distributed import Client

        with Client(self.address, timeout=60, set_as_default=False,
                    security=self.security) as client:
            client.wait_for_workers(count, timeout=120)

    def _tls(self, role: str) -> list[str]:
        # the scheduler listens on tls:// (its address says so) when given --protocol tls
        return [*certs.flags(self.certs, role), *(["--protocol", "tls"] if role ==
                                                   "scheduler" else [])] if self.certs else []

    def stop(self) -> None:
        # each server's process group: whatever it started ends with it
        processes.end([member for process in self.processes
                       for member in processes.group(process.pid)], grace=15)
        for process in self.processes:
            process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
