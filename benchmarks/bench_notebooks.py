"""The size of each notebook as a learner meets it: a sitting, measured.

For every solution notebook: graded exercises, points, code and markdown cells, the mean
and median words per markdown cell, the longest markdown cell, links, and the words a learner reads
(prose and code comments aside, markdown only) at 200 words a minute. With `--run`, also
the wall-clock time of running the solution notebook top to bottom (nbclient, a fresh
kernel, the course's own environment; COURSE_QUICK unset, as a learner runs it). Prints a
table and writes JSON (benchmarks/results/notebooks.json).

    .venv/bin/python benchmarks/bench_notebooks.py            # counts only, seconds
    .venv/bin/python benchmarks/bench_notebooks.py --run      # and run times, several minutes
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import course  # noqa: E402
from autograder.cells import exercises, read_notebook  # noqa: E402

LINK = re.compile(r"\]\((https?://[^)\s]+)\)|<(https?://[^>\s]+)>")
READING_WORDS_PER_MINUTE = 200
CODE_FENCE = re.compile(r"```.*?```", re.S)


def words(markdown: str) -> int:
    """Words of prose: code blocks and table rules left out."""
    prose = CODE_FENCE.sub(" ", markdown)
    return len([w for w in re.split(r"\s+", prose) if re.search(r"\w", w)])


def measure(path: Path) -> dict:
    nb = read_notebook(path)
    graded = exercises(nb)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    counts = [words(m) for m in markdown]
    points = sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells
                 if c.metadata.get("nbgrader", {}).get("grade"))
    return {
        "notebook": path.parent.name,
        "exercises": len(graded),
        "points": points,
        "code_cells": sum(c.cell_type == "code" for c in nb.cells),
        "markdown_cells": len(markdown),
        "words_per_markdown_cell": round(sum(counts) / max(len(counts), 1), 1),
        "median_words_per_markdown_cell": statistics.median(counts) if counts else 0,
        "longest_markdown_cell": max(counts, default=0),
        "links": sum(len(LINK.findall(m)) for m in markdown),
        "reading_minutes": round(sum(counts) / READING_WORDS_PER_MINUTE, 1),
    }


def run_seconds(path: Path, timeout: int) -> float:
    """Wall-clock seconds to run the notebook top to bottom in a fresh kernel."""
    import nbclient

    nb = read_notebook(path)
    with tempfile.TemporaryDirectory(prefix="course-nb-") as tmp:
        work = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, work)
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                         resources={"metadata": {"path": str(work)}})
        start = time.perf_counter()
        client.execute()
        return round(time.perf_counter() - start, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="also time a run of each notebook")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                              "notebooks.json"))
    args = parser.parse_args()
    rows = []
    for path in [p for a in course.assignments(ROOT) for p in course.solution_notebooks(ROOT, a)]:
        row = measure(path)
        if args.run:
            print(f"running {row['notebook']} ...", flush=True)
            row["run_seconds"] = run_seconds(path, args.timeout)
        rows.append(row)
    columns = ["notebook", "exercises", "points", "code_cells", "markdown_cells",
               "words_per_markdown_cell", "median_words_per_markdown_cell",
               "longest_markdown_cell", "links", "reading_minutes"]
    if args.run:
        columns.append("run_seconds")
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"notebooks": rows,
                               "reading_words_per_minute": READING_WORDS_PER_MINUTE},
                              indent=1))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
