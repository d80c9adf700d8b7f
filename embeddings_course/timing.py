"""Small timing helpers for the notebooks' benchmark cells (full runs live in benchmarks/)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(step: Callable[[], object], repeats: int = 10, warmup: int = 2) -> float:
    """Median wall time of `step()` in milliseconds, after `warmup` untimed calls.

    `step` should finish its work before returning (read a value back, or call
    `.numpy()`), so that asynchronous execution does not hide its cost.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)
