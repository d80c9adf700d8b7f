"""Start TensorFlow without its C++ start-up log.

On import, TensorFlow's C++ side writes lines such as "Could not find cuda drivers on your
machine" and "oneDNN custom operations are on" straight to the process's stderr, before
its log level applies; Jupyter shows them in red under the first cell. A notebook's setup
cell imports this module first: it imports TensorFlow and starts its runtime with file
descriptor 2 pointed at /dev/null, then puts stderr back, so that later warnings and
errors show as usual. `TF_CPP_MIN_LOG_LEVEL=3` keeps TensorFlow's later C++ log quiet
(nbgrader fails a test cell that writes to stderr).
"""

from __future__ import annotations

import os
import sys


def start_tensorflow_quietly() -> None:
    """Import TensorFlow and list its devices with stderr silenced; a no-op once done."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf

        tf.config.list_logical_devices()  # the runtime's own start-up lines, here too
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


start_tensorflow_quietly()
