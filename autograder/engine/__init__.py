"""The grading engine: one submission graded, the same way wherever it is graded.

`submission` grades a job (student, assignment, notebook text) with nbgrader's autograde in
a private copy of the course folder; `executor` runs the notebook's own cells in a
sandboxed kernel (`session`, `cellrun`, `messages`, `sandbox`, `kernel`, `service`;
`forkserver`, `forks` and `namespaces`: kernels forked warm, TensorFlow already loaded;
`cpushare` and `cgroups`: each kernel's share of the CPU; `withheld`: the library without
the graded exercises) and its test cells here, in the
grader (`trusted`, `remote`, `wire`: only data crosses between the two).
"""
