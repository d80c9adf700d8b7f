"""Start TensorFlow without its C++ start-up log.

On import, TensorFlow's C++ side writes lines such as "Could not find cuda drivers on your
machine" and "oneDNN custom operations are on" straight to the process's stderr, before
its log level applies; Jupyter shows them in red under the first cell. A notebook's setup
cell imports this module first: it imports TensorFlow and starts its runtime with file
descriptor 2 pointed at /dev/null, then puts stderr back, so that later warnings and
errors show as usual. `TF_CPP_MIN_LOG_LEVEL=3` keeps TensorFlow's later C++ log quiet
(nbgrader fails a test cell that writes to stderr).

TensorFlow's Python logger is kept at WARNING, each line printed once: in Jupyter,
TensorFlow sets it to INFO on stdout, and a handler on the root logger prints every line
again on stderr (creating a `ParameterServerStrategy` wrote four `INFO:tensorflow` lines
twice). Warnings and errors still show.

It also makes the kernel show every error message whole at Validate's width
(`embeddings_course.messages`).
"""

from __future__ import annotations

import logging
import os
import sys

from embeddings_course import messages


def start_tensorflow_quietly() -> None:
    """Import TensorFlow and list its devices with stderr silenced (once), and quiet its
    Python logger."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "tensorflow" not in sys.modules:
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
    quiet_python_log()


def quiet_python_log() -> None:
    """TensorFlow's Python logger at WARNING or above, each line printed once."""
    import tensorflow as tf

    logger = tf.get_logger()
    if logger.getEffectiveLevel() < logging.WARNING:
        logger.setLevel(logging.WARNING)
    if logger.handlers:  # its own handler prints the line: not the root logger's too
        logger.propagate = False


start_tensorflow_quietly()
messages.install()
