"""nbgrader configuration of the course (read by every nbgrader command run here)."""

import os

c = get_config()  # noqa: F821

HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.course_id = "sparse-embeddings"
# The instructor source holds the solutions; the student release is notebooks/.
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"

# Every release notebook opens with how to work, how to Validate and where help is.
c.IncludeHeaderFooter.header = os.path.join(HERE, "autograder", "header.ipynb")

# A cell may run this long (seconds) before nbgrader stops it. nbgrader's default is
# 30 s; the slowest graded cell (a short training run) takes a few seconds on 2
# cores, so 120 s leaves room for a slow laptop while a student's infinite loop
# still ends.
CELL_TIMEOUT = 120
c.Execute.timeout = CELL_TIMEOUT

# nbgrader's own autograde (`nbgrader autograde` here, the formgrader's Autograde button)
# grades with the course's engine, as `course-grade class` does: each notebook's cells in
# a sandboxed kernel (no network, no checkout, no /root, a private home; bubblewrap, else
# autograde refuses in one sentence), the library without that notebook's answers, the
# tests in the grader's own process; the limits are the engine's defaults (autograder/
# limits.py: memory, processes, output, a time limit per submission) with the cell time
# above. What nbgrader's autograde does not do (the repairs of a broken submission, many
# submissions at once, grades.csv and the course's feedback pages) is `course-grade class`'s.
from autograder import course  # noqa: E402
from autograder.engine.trusted.executor import FINDINGS  # noqa: E402
from autograder.engine.trusted.submission import AUTOGRADE_PREPROCESSORS  # noqa: E402

# The engine's facts of the course (pyproject.toml's [tool.course-grade]: the library the
# sandbox shows, what each kernel loads first) are this checkout's, wherever nbgrader runs:
# a course folder elsewhere has none of its own.
os.environ.setdefault(course.ROOT_VARIABLE, HERE)
c.Autograde.autograde_preprocessors = list(AUTOGRADE_PREPROCESSORS)
c.SandboxedExecute.limits = {"cell_timeout": CELL_TIMEOUT}
# what the engine found (time-outs, crashes, cut output) stays in the autograded notebook
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {
    ("kernelspec",), ("language_info",), ("nbgrader",), (FINDINGS,)}

# What a student's answer cell holds in the release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# nbgrader's feedback pages (`nbgrader generate_feedback`, the formgrader's Generate
# Feedback) are made from the autograded notebooks, which hold the hidden tests: the
# course's preprocessor takes them out, and cuts any output or metadata that quotes one;
# another gives the page the course's late penalty, as grades.csv has it.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import GetGrades  # noqa: E402

from autograder.grading.feedback import CourseLatePenalty, WithoutHiddenTests  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, CourseLatePenalty, WithoutHiddenTests,
                                    CSSHTMLHeaderPreprocessor]
