"""The grading engine: one submission graded, the same way wherever it is graded.

The folders follow the threat model. `sandboxed/` runs inside the student's sandbox, beside
the student's code, and is trusted with nothing; `trusted/` is the grader, which starts and
watches the kernel and runs every test cell itself; `observer/` computes the facts a verdict
rests on from what the kernel sent as data, running none of the student's Python. `wire`
is the boundary: what crosses between the two sides, data and never code.
"""
