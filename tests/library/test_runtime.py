"""A notebook's first import starts TensorFlow without a line on stderr."""

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow  # TensorFlow in a process of its own: 9 s on a slow machine
def test_importing_the_runtime_module_writes_nothing_to_stderr():
    code = ("import embeddings_course.runtime\nimport keras\nimport tensorflow as tf\n"
            "print(tf.reduce_sum(tf.ones(3)).numpy())\n"
            "import sys; sys.stderr.write('later stderr still shows\\n')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3.0"
    assert done.stderr == "later stderr still shows\n"


@pytest.mark.slow  # TensorFlow in a process of its own: 9 s on a slow machine
def test_without_it_tensorflow_does_write_its_start_up_log():
    """The check above can fail: the start-up lines are real on this machine."""
    done = subprocess.run([sys.executable, "-c", "import tensorflow"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0
    assert done.stderr.strip(), "TensorFlow printed nothing at start-up: the test above " \
        "proves nothing here"
