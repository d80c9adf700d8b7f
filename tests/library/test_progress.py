"""`progress.Progress`: one output updated in place in a notebook, Keras' bar elsewhere."""

from embeddings_course.progress import Progress


class FakeHandle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, obj):
        self.shown.append(obj.data)


def test_in_a_notebook_one_output_is_updated_at_most_per_second_and_at_the_end():
    displayed, updates = [], []
    now = [0.0]

    def display(obj, display_id=False):
        assert display_id is True
        displayed.append(obj.data)
        return FakeHandle(updates)

    bar = Progress(100, "Epoch 1/2", per_second=2.0, display=display, clock=lambda: now[0])
    for step in range(1, 101):
        now[0] += 0.01  # 100 steps in one second
        bar.update(step, loss=1.0 / step)
    assert len(displayed) == 1  # one output for the whole epoch
    assert 2 <= len(updates) <= 4, updates  # about two a second, and the last one
    assert updates[-1].startswith("Epoch 1/2 [" + "=" * 30 + "] 100/100 loss 0.0100")


def test_outside_a_notebook_it_is_keras_progbar_on_stdout(capsys):
    bar = Progress(3, "Epoch 1/1")
    for step in (1, 2, 3):
        bar.update(step, loss=0.5)
    printed = capsys.readouterr()
    assert "Epoch 1/1" in printed.out and "3/3" in printed.out and printed.err == ""


def test_in_a_real_kernel_a_training_loop_leaves_one_output_per_epoch():
    import nbclient
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from embeddings_course.progress import Progress\n"
        "for epoch in range(2):\n"
        "    bar = Progress(300, f'Epoch {epoch + 1}/2')\n"
        "    for step in range(1, 301):\n"
        "        bar.update(step, loss=1 / step)\n")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    assert len(outputs) == 2, outputs  # one per epoch, not one per step
    assert all(o.output_type == "display_data" for o in outputs)
    assert "300/300" in outputs[-1].data["text/plain"]
