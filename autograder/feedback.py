"""nbgrader's own feedback (`nbgrader generate_feedback`, the formgrader's *Generate
Feedback*), without a hidden test.

nbgrader makes a student's feedback page from the autograded notebook, which holds the hidden
tests (autograde puts them back to run them) and whatever their run printed. The course's
nbgrader_config.py adds `WithoutHiddenTests` to that conversion: each hidden block leaves
the cells' source, and every output (errors, printed text, displayed values) is cut where
it quotes a hidden test, as the grader's messages are (autograder.engine.redact).
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from autograder.notebooks import HIDDEN_MARKERS

# autograder.engine is imported only when a notebook is converted: this module is imported
# by the course's nbgrader_config.py, read by every nbgrader command

NOTE = "# (hidden tests: not shown)"


def without_hidden(source: str) -> str:
    begin, end = HIDDEN_MARKERS
    return re.sub(re.escape(begin) + r".*?" + re.escape(end), NOTE, source, flags=re.S)


class WithoutHiddenTests(Preprocessor):
    """Takes the hidden tests out of an autograded notebook turned into feedback."""

    enabled = Bool(True, help="nbconvert applies only enabled preprocessors").tag(config=True)

    def preprocess(self, nb, resources):
        from autograder.engine import hidden_parts

        hidden = []
        for cell in nb.cells:
            hidden += hidden_parts(cell.source)
        hidden += self._from_gradebook(resources)
        for cell in nb.cells:
            cell.source = without_hidden(cell.source)
            for out in cell.get("outputs", []):
                _cut_output(out, hidden)
        return nb, resources

    @staticmethod
    def _from_gradebook(resources) -> list[str]:
        """The hidden tests as the gradebook holds them (a student may have edited the
        notebook's copy; autograde restores it, and this does not depend on that)."""
        info = (resources or {}).get("nbgrader", {})
        if not info.get("db_url"):
            return []
        from nbgrader.api import Gradebook, MissingEntry

        from autograder.engine import hidden_parts

        try:
            with Gradebook(info["db_url"]) as gradebook:
                notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
                return [part for cell in notebook.source_cells
                        for part in hidden_parts(cell.source)]
        except (MissingEntry, KeyError):
            return []


def _cut_output(out, hidden: list[str]) -> None:
    from autograder.engine import redact

    if out.get("output_type") == "error":
        line = redact(f"{out.get('ename', '')}: {out.get('evalue', '')}", hidden)
        out["evalue"] = line.split(": ", 1)[1] if ": " in line else line
        out["traceback"] = [line]
    elif out.get("output_type") == "stream":
        out["text"] = _cut_text(out.get("text", ""), hidden)
    for mime, value in list(out.get("data", {}).items()):
        if mime.startswith("text/") or mime.endswith("json"):
            text = value if isinstance(value, str) else "".join(value) \
                if isinstance(value, list) else str(value)
            cut = _cut_text(text, hidden)
            if cut != text:
                out["data"] = {"text/plain": cut}
                break


def _cut_text(text: str, hidden: list[str]) -> str:
    from autograder.engine import redact

    return redact(text, hidden, limit=max(len(text), 1))  # printed text: cut at quotes only
