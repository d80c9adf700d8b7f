"""What an idle Dask cluster costs the machine it grades on: Dask's defaults against the
course's settings (autograder/dask.yaml).

Starts a real `dask scheduler` and --workers `dask worker --nthreads 1` processes on
localhost (autograder.scale.dask_local.LocalProcesses), once with Dask's own configuration and
once with DASK_CONFIG=autograder/dask.yaml, lets them idle, and reads the CPU time all of
them used from /proc. Prints a table and writes JSON (benchmarks/results/dask-idle.json).

    .venv/bin/python benchmarks/bench_dask_idle.py [--seconds 30] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.scale.dask_cluster import CONFIG  # noqa: E402
from autograder.scale.dask_local import LocalProcesses  # noqa: E402


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of `pids` so far (children that were waited for included)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def idle_share(workers: int, seconds: float, config: str) -> float:
    """Share of one core the idle cluster used over `seconds`."""
    with tempfile.TemporaryDirectory(prefix="dask-idle-") as folder, \
            LocalProcesses(workers, Path(folder), env={"DASK_CONFIG": config}) as cluster:
        time.sleep(5)  # past the start-up
        pids = [p.pid for p in cluster.processes]
        before, started = cpu_seconds(pids), time.monotonic()
        time.sleep(seconds)
        return (cpu_seconds(pids) - before) / (time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                              "dask-idle.json"))
    args = parser.parse_args()
    rows = []
    for name, config in (("Dask's defaults", os.devnull + ".none"),
                         ("autograder/dask.yaml", str(CONFIG))):
        print(f"{name}: a scheduler and {args.workers} idle worker(s) for {args.seconds:g} s "
              "...", flush=True)
        rows.append({"settings": name, "core_share": idle_share(args.workers, args.seconds,
                                                                config)})
    print(f"\n{'settings':<24}{'share of one core':>20}{'share of the machine':>24}")
    cores = os.cpu_count() or 1
    for row in rows:
        row["machine_share"] = row["core_share"] / cores
        print(f"{row['settings']:<24}{row['core_share']:>19.1%}{row['machine_share']:>24.2%}")
    result = {"workers": args.workers, "seconds": args.seconds, "cores": cores, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
