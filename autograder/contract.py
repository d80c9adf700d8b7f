"""The exercise contract of ../shared/COURSE.md: the graded names each notebook must have.

Notebooks may add exercises; these names may not go missing. COURSE.md's notebook 05 is
split in two sittings here: 05 (data, vocabulary, loss) and 06 (model, training,
evaluation); its 06 is 07. COURSE.md's `rows_changed` of 03 is in 01 here, so that 03
keeps to five graded exercises (its written answer is the fifth). Test cells are named
`test_<name>` or `test_<name>_<aspect>`.
"""

REQUIRED = {
    "01-autodiff": ["sgd_step", "numerical_gradient", "gradients_or_zeros", "rows_changed",
                    "fit_linear_regression"],
    "02-gather-gradients": ["gather_gradient", "to_dense", "deduplicate", "clip_rows",
                            "select_rows"],
    "03-sparse-updates": ["sparse_sgd_update", "entry_stop_gradients",
                          "lazy_adam_update", "PartiallyFrozenEmbedding"],
    "04-tf1-bridge": ["build_capped_train_op"],
    "05-tweets-to-tensors": ["normalize_token", "build_vocab", "encode_batch",
                             "masked_cross_entropy"],
    "06-bilstm-ner": ["build_tagger", "train_step", "extract_spans", "precision_recall_f1"],
    "07-embeddings-at-scale": ["shard_of", "step_traffic_bytes"],
}
