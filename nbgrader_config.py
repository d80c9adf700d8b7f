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
c.Execute.timeout = 120

# What a student's answer cell holds in the release.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# nbgrader's feedback pages (`nbgrader generate_feedback`, the formgrader's Generate
# Feedback) are made from the autograded notebooks, which hold the hidden tests: the
# course's preprocessor takes them out, and cuts any output that quotes one.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import GetGrades  # noqa: E402

from autograder.grading.feedback import WithoutHiddenTests  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, WithoutHiddenTests, CSSHTMLHeaderPreprocessor]
