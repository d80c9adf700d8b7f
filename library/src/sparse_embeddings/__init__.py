"""Sparse training of embedding tables in Keras 3 (TensorFlow backend).

- `LazyAdam` (`sparse_embeddings.optimizers`): a Keras 3 optimizer that, for a
  `tf.IndexedSlices` gradient, updates the moments and values of only the rows
  in the batch; Keras Adam for dense gradients.
- `PartiallyFrozenEmbedding` (`sparse_embeddings.layers`): an embedding layer
  whose pretrained rows are frozen and whose new rows train.
- `deduplicate`, `sum_duplicates`, `sparse_sgd_update`, `lazy_adam_update`
  (`sparse_embeddings.sparse`): the sparse steps as plain functions.

No version check on import: any TensorFlow and Keras that the distribution's
metadata allows are used as they are (README.md says which were tested).
"""

from sparse_embeddings.layers import PartiallyFrozenEmbedding
from sparse_embeddings.optimizers import LazyAdam
from sparse_embeddings.sparse import (
    deduplicate,
    lazy_adam_update,
    sparse_sgd_update,
    sum_duplicates,
)

__all__ = [
    "LazyAdam",
    "PartiallyFrozenEmbedding",
    "deduplicate",
    "lazy_adam_update",
    "sparse_sgd_update",
    "sum_duplicates",
]
__version__ = "1.0.0"
