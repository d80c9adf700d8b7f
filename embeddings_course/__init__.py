"""The course's own helpers: what the notebooks import that is not the lesson.

Check helpers that teach (`checks`), what tests may observe of a graded kernel
(`observe`), the library's versions of the exercises (`mirrors`), plots,
timing and progress bars, the data packages (`data`), the TF 1 bridge (`tf1`),
the NER pipeline (`ner`, `spans`, `tagging`) and notebook 07's cluster
(`cluster`). They are built on the library `sparse_embeddings` (library/:
`LazyAdam`, `PartiallyFrozenEmbedding`, the sparse updates), which is usable
without the course.

Importing this package checks that the TensorFlow it finds is the one the course
was checked on, and says what to run when it is not (the library checks nothing).
"""

from embeddings_course._env import check_environment

check_environment()

__all__ = ["check_environment"]
__version__ = "0.1.0"
