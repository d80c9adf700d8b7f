"""Plots the notebooks show, kept out of the lessons."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np


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
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.tick_params(axis="x", labelrotation=15)
    return ax


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
