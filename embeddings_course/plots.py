"""Plots the notebooks show, kept out of the lessons."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker


def loss_curves(curves: Mapping[str, Sequence[float]], title: str = "Training loss",
                log_scale: bool = True, ax=None):
    """Plot one loss curve per entry of `curves` (label -> losses per step).

    Non-finite losses (a diverging run) are cut off where they start and marked.
    Returns the matplotlib Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for label, losses in curves.items():
        losses = np.asarray(losses, dtype=np.float64)
        finite = np.isfinite(losses)
        last = int(np.argmin(finite)) if not finite.all() else len(losses)
        steps = np.arange(len(losses))
        line, = ax.plot(steps[:last], losses[:last], label=label)
        if last < len(losses):
            ax.axvline(last, color=line.get_color(), linestyle=":", alpha=0.7)
            ax.annotate("diverged", (last, ax.get_ylim()[1]), color=line.get_color(),
                        ha="right", va="top", fontsize=8)
    if log_scale:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def bars(values: Mapping[str, float], ylabel: str, title: str = "", log_scale: bool = False,
         unit: str = "", ax=None):
    """A bar chart of `values` (label -> number), each bar labelled with its value."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    labels = list(values)
    heights = [float(values[k]) for k in labels]
    drawn = ax.bar(labels, heights, color=plt.rcParams["axes.prop_cycle"].by_key()["color"])
    ax.bar_label(drawn, labels=[f"{h:,.3g}{unit}" for h in heights], fontsize=8)
    if log_scale:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis, heights)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.tick_params(axis="x", labelrotation=15)
    return ax


def _plain_log_ticks(axis, values: Sequence[float]):
    """Label a log axis with plain numbers (5, 10, 20, 50, not 6 x 10^0), at 1, 2 and 5
    times a power of ten over a short range, at powers of ten only over a long one, and
    leave the minor ticks unlabelled: labelled, they crowd a range of a decade or two."""
    positive = [v for v in values if v > 0]
    decades = float(np.log10(max(positive) / min(positive))) if positive else 0.0
    subs = np.arange(1.0, 10.0) if decades < 0.7 else (1.0, 2.0, 5.0) if decades <= 2 else (1.0,)
    axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:,g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def rows_moved(moved: Mapping[str, np.ndarray], batches: Sequence[Sequence[int]],
               title: str = "Which rows move at each step"):
    """One panel per optimizer: rows (y) by steps (x), filled where the row changed.

    moved: optimizer name -> bool array (num_steps, num_rows), True where the row
    changed at that step; batches: the ids looked up at each step, outlined in black.
    Returns the matplotlib Figure.
    """
    names = list(moved)
    num_steps, num_rows = np.asarray(moved[names[0]]).shape
    fig, axes = plt.subplots(1, len(names), figsize=(1.6 * len(names) + 1, 0.28 * num_rows + 1.4),
                             sharey=True)
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names, strict=True):
        grid = np.asarray(moved[name], dtype=float).T  # rows x steps
        ax.imshow(grid, cmap="Oranges", vmin=0, vmax=1.3, aspect="auto",
                  extent=(0.5, num_steps + 0.5, num_rows - 0.5, -0.5))
        for step, ids in enumerate(batches, start=1):
            for row in ids:
                ax.add_patch(plt.Rectangle((step - 0.5, row - 0.5), 1, 1, fill=False,
                                           edgecolor="black", linewidth=1.2))
        ax.set_title(name, fontsize=9)
        ax.set_xticks(range(1, num_steps + 1))
        ax.set_xlabel("step")
    axes[0].set_yticks(range(num_rows))
    axes[0].set_ylabel("row")
    fig.suptitle(title + " (filled: moved; outlined: in the batch)", fontsize=10)
    fig.tight_layout()
    return fig


def shard_layout(sizes: Sequence[int], servers: Sequence[str], touched: Sequence[int] = (),
                 title: str = "Which shard holds which row"):
    """One bar of rows, cut into shards (one colour per parameter server), with the rows a
    batch touched marked. sizes: rows per shard in order; servers: the device of each
    shard ("ps:0", ...); touched: row ids to mark. Returns the matplotlib Axes."""
    _, ax = plt.subplots(figsize=(7, 1.9))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = sorted(set(servers))
    start = 0
    for k, (size, server) in enumerate(zip(sizes, servers, strict=True)):
        ax.barh(0, size, left=start, color=colours[names.index(server) % len(colours)],
                edgecolor="white", label=server if server not in
                ax.get_legend_handles_labels()[1] else None)
        ax.text(start + size / 2, 0, f"shard {k}\nrows {start}-{start + size - 1}",
                ha="center", va="center", fontsize=8, color="white")
        start += size
    for row in touched:
        ax.plot([row + 0.5, row + 0.5], [0.45, 0.6], color="black", linewidth=1)
    ax.set_xlim(0, start)
    ax.set_ylim(-0.5, 0.7)
    ax.set_yticks([])
    ax.set_xlabel("row id" + (" (ticks: rows the batch touched)" if len(touched) else ""))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8, ncol=len(names), bbox_to_anchor=(1, 1.45))
    return ax


def traffic(xs: Sequence[float], series: Mapping[str, Sequence[float]], xlabel: str,
            measured: Mapping[str, Sequence[float]] | None = None,
            title: str = "Bytes moved per step"):
    """Bytes per step against `xs` on log-log axes: a line per entry of `series` (the
    arithmetic), and markers for `measured` values of the same names. Returns the Axes."""
    _, ax = plt.subplots(figsize=(6, 3.5))
    for label, values in series.items():
        line, = ax.plot(xs, values, label=f"{label} (arithmetic)")
        if measured and label in measured:
            ax.plot(xs[:len(measured[label])], measured[label], "o",
                    color=line.get_color(), label=f"{label} (measured)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("bytes per step")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax
