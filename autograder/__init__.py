"""Grading of the sparse-embeddings course on top of nbgrader.

- `course`: where the course lives, its nbgrader config, its assignments.
- `release`: regenerate `notebooks/` from `solutions/` with nbgrader.
- `grading`: real `nbgrader autograde` runs in throw-away course folders.
- `mutants`: build submissions from wrong and other-correct answers, and grade them.
- `validation`: nbgrader's `Validator`, with an answer instead of an exit code of 0.
- `engine` and `executor`: one submission graded; its notebook runs in a sandboxed kernel
  (`session`, `sandbox`, `kernel`, `service`, `withheld`: the library without the graded
  exercises) and its tests run here, in the grader (`trusted`, `remote`, `wire`: only data
  crosses between the two).
"""

from autograder.errors import CourseError

__all__ = ["CourseError"]
