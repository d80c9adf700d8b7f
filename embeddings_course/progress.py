"""A progress line for long loops: updated in place in a notebook, Keras' bar elsewhere.

Keras' `Progbar` writes a new chunk of text to stdout at every update; in a notebook each
chunk is stored as an output of the cell, hundreds for one training run. In a Jupyter
kernel `Progress` keeps one output per line instead (an IPython display handle, updated
in place, at most `per_second` times a second), and prints the final line once. Outside a
kernel it is Keras' `Progbar`. Nothing goes to stderr (a graded cell must not write there).
"""

from __future__ import annotations

import sys
import time


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    shell = shell.get_ipython() if shell is not None else None
    return shell is not None and "ipykernel" in sys.modules and \
        type(shell).__name__ == "ZMQInteractiveShell"


class Progress:
    """`Progress(total, title)`, then `update(done, **values)`; `done == total` ends it."""

    def __init__(self, total: int, title: str = "", per_second: float = 2.0,
                 display=None, clock=time.monotonic):
        self.total, self.title = total, title
        self.interval = 1.0 / per_second
        self.clock = clock
        self.last = -float("inf")
        self.handle = None
        self.bar = None
        if display is None and _in_kernel():
            from IPython.display import display as ipython_display

            display = ipython_display
        if display is not None:
            self.handle = display(self._text(0, {}), display_id=True)
        else:
            import keras

            print(title, file=sys.stdout)
            self.bar = keras.utils.Progbar(total, stateful_metrics=["val_f1"])

    def _text(self, done: int, values: dict):
        from IPython.display import Pretty

        width = 30
        filled = int(width * done / max(self.total, 1))
        shown = " ".join(f"{k} {v:.4f}" for k, v in values.items())
        return Pretty(f"{self.title} [{'=' * filled}{'.' * (width - filled)}] "
                      f"{done}/{self.total} {shown}".rstrip())

    def update(self, done: int, **values) -> None:
        if self.bar is not None:
            self.bar.update(done, list(values.items()))
            return
        now = self.clock()
        if done >= self.total or now - self.last >= self.interval:
            self.last = now
            self.handle.update(self._text(done, values))
