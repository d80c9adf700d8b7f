"""Helper library of the sparse-embeddings course.

What is not the lesson lives here: check helpers that teach (`checks`), plots
(`plots`), the data packages (`data`). Later notebooks add the Keras 3
`LazyAdam` and `PartiallyFrozenEmbedding`.

Importing the package checks that the TensorFlow it finds is the one the course
was checked on, and says what to run when it is not.
"""

from sparse_embeddings._env import check_environment

check_environment()

__all__ = ["check_environment"]
__version__ = "0.1.0"
