"""nbgrader's own feedback (`nbgrader generate_feedback`, the formgrader's *Generate
Feedback*), without a hidden test.

nbgrader makes a student's feedback page from the autograded notebook, which holds the hidden
tests (autograde puts them back to run them). The course's nbgrader_config.py adds
`WithoutHiddenTests` to that conversion: each hidden block leaves the cells' source. The
outputs stay as they are: the tests ran in the grader, never in the student's kernel
(autograder.engine.trusted), so a test cell's output is the test's own message, written by the
course's author, or what the student's code printed.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from autograder.cells import HIDDEN_MARKERS

NOTE = "# (hidden tests: not shown)"


def without_hidden(source: str) -> str:
    begin, end = HIDDEN_MARKERS
    return re.sub(re.escape(begin) + r".*?" + re.escape(end), NOTE, source, flags=re.S)


class WithoutHiddenTests(Preprocessor):
    """Takes the hidden tests out of an autograded notebook turned into feedback."""

    enabled = Bool(True, help="nbconvert applies only enabled preprocessors").tag(config=True)

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            cell.source = without_hidden(cell.source)
        return nb, resources
