"""The plotting and timing helpers the notebooks call."""

import matplotlib
import numpy as np
import pytest

from sparse_embeddings import plots, timing

matplotlib.use("Agg")


def test_median_ms_times_the_step_and_warms_up():
    calls = []
    result = timing.median_ms(lambda: calls.append(1), repeats=5, warmup=3)
    assert len(calls) == 8
    assert 0 <= result < 50


def test_median_ms_refuses_zero_repeats():
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        timing.median_ms(lambda: None, repeats=0)


def test_bars_labels_every_bar():
    ax = plots.bars({"sparse": 0.2, "dense": 76.3}, ylabel="MiB", unit=" MiB", log_scale=True)
    assert [t.get_text() for t in ax.texts] == ["0.2 MiB", "76.3 MiB"]
    assert ax.get_yscale() == "log"


def test_rows_moved_draws_one_panel_per_optimizer_and_outlines_batches():
    moved = {"SGD": np.eye(3, 4, dtype=bool), "Adam": np.ones((3, 4), bool)}
    batches = [[0], [1], [2, 3]]
    fig = plots.rows_moved(moved, batches)
    assert [ax.get_title() for ax in fig.axes] == ["SGD", "Adam"]
    assert all(len(ax.patches) == 4 for ax in fig.axes)
    image = fig.axes[1].images[0].get_array()
    assert image.shape == (4, 3) and image.min() == 1
