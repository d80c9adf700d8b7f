"""Grading of the sparse-embeddings course on top of nbgrader.

- `course`: where the course lives, its nbgrader config, its assignments.
- `release`: regenerate `notebooks/` from `solutions/` with nbgrader.
- `grading`: real `nbgrader autograde` runs in throw-away course folders.
- `mutants`: build submissions from wrong and other-correct answers, and grade them.
- `validation`: nbgrader's `Validator`, with an answer instead of an exit code of 0.
"""

from autograder.errors import CourseError

__all__ = ["CourseError"]
