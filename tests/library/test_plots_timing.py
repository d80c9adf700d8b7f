"""The plotting and timing helpers the notebooks call."""

import matplotlib
import numpy as np
import pytest

from embeddings_course import plots, timing

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


def test_shard_layout_draws_a_segment_per_shard_coloured_by_server():
    ax = plots.shard_layout([3, 3, 2, 2], ["ps:0", "ps:1", "ps:0", "ps:1"], touched=[1, 9])
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.texts][-1] == "shard 3\nrows 8-9"
    assert ax.patches[0].get_facecolor() == ax.patches[2].get_facecolor()
    assert ax.patches[0].get_facecolor() != ax.patches[1].get_facecolor()
    assert len(ax.lines) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ps:0", "ps:1"]


def test_traffic_plots_arithmetic_lines_and_measured_markers():
    ax = plots.traffic([10, 100], {"sparse": [1, 2], "dense": [10, 100]}, xlabel="rows",
                       measured={"sparse": [1, 2]})
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "sparse (arithmetic)", "sparse (measured)", "dense (arithmetic)"]


def test_bars_log_axis_labels_plain_numbers_and_no_minor_ticks():
    import matplotlib.pyplot as plt

    for values, want in [({"a": 5.2, "b": 60.9, "c": 12.2}, ["5", "10", "20", "50"]),
                         ({"a": 0.0064, "b": 76.3}, ["0.01", "0.1", "1", "10", "100"])]:
        ax = plots.bars(values, ylabel="ms", log_scale=True)
        ax.figure.canvas.draw()
        low, high = ax.get_ylim()
        shown = [t.get_text() for t, y in zip(ax.get_yticklabels(), ax.get_yticks(),
                                              strict=True) if low <= y <= high]
        assert shown == want
        assert not any(t.get_text() for t in ax.get_yticklabels(minor=True))
        plt.close(ax.figure)
