"""Reading a submission before it is graded: what cannot be graded (empty, not JSON, another
assignment's notebook) scores 0 with its reason; an old format is converted, deleted test
cells are put back, edited test cells and copied grade ids are noted."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import nbformat

from autograder.cells import grade_id, is_test
from autograder.grading.intake import Submission


@dataclass
class Prepared:
    notebook: nbformat.NotebookNode | None
    notes: list[str] = field(default_factory=list)
    fatal: str | None = None  # why it scores 0 without running


# what a student does about a file that cannot be read
AGAIN = ("; open your copy in JupyterLab to check that it opens with your answers, save it "
         "(File > Save Notebook) and submit it again")


def prepare_submission(sub: Submission, release: nbformat.NotebookNode,
                       other_ids: dict[str, set[str]]) -> Prepared:
    if sub.data is None:
        return Prepared(None, fatal=f"no {sub.notebook} was submitted")
    if not sub.data.strip():
        return Prepared(None, fatal=f"{sub.notebook} is an empty file{AGAIN}")
    try:
        text = sub.data.decode("utf-8")
        raw = json.loads(text)
    except UnicodeDecodeError:
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook: not UTF-8 text{AGAIN}")
    except json.JSONDecodeError as error:
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook: not valid JSON "
                                    f"({error.msg}: line {error.lineno}, column "
                                    f"{error.colno}), as when a file is cut short or edited "
                                    f"outside JupyterLab{AGAIN}")
    if not isinstance(raw, dict) or not ("cells" in raw or "worksheets" in raw):
        return Prepared(None, fatal=f"{sub.notebook} is JSON but not a notebook (no cells)"
                                    f"{AGAIN}")
    notes = []
    version = raw.get("nbformat")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat raises several kinds
        return Prepared(None, fatal=f"{sub.notebook} is not a notebook nbformat can read "
                                    f"(nbformat {version}): {str(error).splitlines()[0]}"
                                    f"{AGAIN}")
    if isinstance(version, int) and version < 4:
        notes.append(f"the notebook was saved as nbformat {version}; it was converted to "
                     "nbformat 4 and graded")
    ids = [grade_id(c) for c in nb.cells if grade_id(c)]
    wanted = [grade_id(c) for c in release.cells if grade_id(c)]
    if ids and not set(ids) & set(wanted):
        for other, other_set in other_ids.items():
            if set(ids) & other_set:
                return Prepared(None, fatal=f"this is the notebook of assignment {other}, "
                                            f"not of {sub.assignment}: submit "
                                            f"{sub.assignment}'s {sub.notebook} instead")
        return Prepared(None, fatal=f"{sub.notebook} has no graded cell of {sub.assignment}")
    if not ids:
        notes.append("the notebook has no graded cells left (was it copied into a new "
                     "notebook?): nbgrader put back the test cells, the answers are missing")
    counts = {i: ids.count(i) for i in set(ids)}
    for gid, count in sorted(counts.items()):
        if count > 1:
            notes.append(f"grade id {gid} appears in {count} cells; the last of them was "
                         "graded and the others ran as ordinary cells")
            # nbgrader's DeduplicateIds does the same but leaves an empty nbgrader entry,
            # which its later steps fail on (KeyError: 'grade_id'): drop the entry instead.
            for cell in [c for c in nb.cells if grade_id(c) == gid][:-1]:
                cell.metadata.pop("nbgrader", None)
    release_tests = {grade_id(c): c.source for c in release.cells if is_test(c)}
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in release_tests and cell.source.strip() != release_tests[gid].strip():
            notes.append(f"test cell {gid} had been changed; the original test ran")
    missing = [gid for gid in release_tests if gid not in counts]
    if missing:
        _put_back(nb, release, missing)
        notes.append(f"test cell(s) {', '.join(missing)} had been deleted; they were put "
                     "back and ran")
    for cell in nb.cells:  # copied cells share ids; nbgrader needs none
        cell.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    return Prepared(nb, notes)


def _put_back(nb, release, missing: list[str]) -> None:
    """Insert the release's test cells `missing` after the cell that precedes them there."""
    order = [grade_id(c) for c in release.cells if grade_id(c)]
    by_id = {grade_id(c): c for c in release.cells if grade_id(c)}
    for gid in missing:
        position = len(nb.cells)
        for earlier in reversed(order[:order.index(gid)]):
            hits = [i for i, c in enumerate(nb.cells) if grade_id(c) == earlier]
            if hits:
                position = hits[-1] + 1
                break
        original = by_id[gid]
        nb.cells.insert(position, nbformat.v4.new_code_cell(
            original.source, metadata=copy.deepcopy(original.metadata)))


