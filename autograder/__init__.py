"""Grading of the sparse-embeddings course on top of nbgrader, in packages that follow a
submission's flow; each imports only the ones before it.

- here, the base every part uses: `course` (where the course lives, its config, its
  assignments), `cells` (nbgrader's cells of a notebook), `limits`, `processes`, `late`,
  `errors`, `contract`; and `cli`, the commands, which use every part;
- `engine`: one submission graded, its notebook in a sandboxed kernel, its tests here;
- `scale`: many submissions' jobs, in local worker processes or on a Dask cluster;
- `grading`: intake, repair, the engine's results kept, reported and fed back; a class
  (`classgrade`), a learner's own notebook (`selfgrade`);
- `term`: the end of term (grades to the LMS, similar answers);
- `hub`: the class's JupyterHub;
- `authoring`: release, validation, mutants, the demo class, the notebooks' button.
"""

from autograder.errors import CourseError

__all__ = ["CourseError"]
