"""Every error message whole, at the width where it is read.

nbgrader's Validate in a terminal (`nbgrader validate`, `course validate`) prints each line
of a failing cell's traceback after an indent of 4 and cuts it at 87 characters with "...":
its `Validator.width` of 90, less 3 for the dots. A long message lost its end that way, the
"got ..., expected ..." part or the end of a hint. Here the notebook's kernel wraps the
message of any exception it shows (a check's, an `assert`'s, TensorFlow's own) at `WIDTH`
columns, its first line counted with the exception's name in front, so that no line
reaches the cut; what a line holds is never shortened, only carried to the next.

The traceback also leaves out the frames of the course's check helpers (`HELPERS`): a
failing check shows the test cell's line that called it, then the message, not the
helper's own code.

`install()` puts this into the running IPython shell (the notebook's setup cell imports
`embeddings_course.runtime`, which calls it); outside IPython it does nothing.
"""

from __future__ import annotations

import re
import textwrap

# The widest line of a message, its first line with "ExceptionName: " in front. nbgrader
# cuts after 87 characters, its 4 of indent included: 80 leaves room and fits a terminal.
WIDTH = 80
# what a line wrapped from a longer one starts with, so that it reads as its continuation
CONTINUATION = "  "

# modules whose frames a traceback leaves out (a failing check's own code is not the news)
HELPERS = frozenset({"embeddings_course.checks"})

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def visible(text: str) -> str:
    """`text` without its terminal colour codes."""
    return _ANSI.sub("", text)


def fit(message: str, first_width: int = WIDTH, width: int = WIDTH) -> str:
    """`message` with each line wrapped to `width` columns (the first line to
    `first_width`): words move to a next line, indented by `CONTINUATION`; a word longer
    than a line is split. Nothing is dropped: the words are those of `message`, in order."""
    out: list[str] = []
    for number, line in enumerate(message.split("\n")):
        limit = first_width if number == 0 else width
        if len(line) <= limit:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        wrapped = textwrap.wrap(
            line, width=limit, subsequent_indent=indent + CONTINUATION,
            break_long_words=True, break_on_hyphens=False, drop_whitespace=True,
            replace_whitespace=False)
        if number == 0 and len(wrapped) > 1:  # the lines after the first are full width
            rest = " ".join(part.strip() for part in wrapped[1:])
            wrapped = wrapped[:1] + textwrap.wrap(
                rest, width=width, initial_indent=indent + CONTINUATION,
                subsequent_indent=indent + CONTINUATION, break_long_words=True,
                break_on_hyphens=False)
        out.extend(wrapped or [line])
    return "\n".join(out)


def fit_exception_line(line: str, name: str) -> str:
    """The last part of an IPython traceback, `name: message` (with colour codes around
    the name), with the message fitted after the name."""
    head, sep, message = line.partition(": ")
    if not sep or visible(head).strip() != name:
        return fit(line)
    return head + sep + fit(message, first_width=max(WIDTH - len(name) - 2, 20))


def without_helpers(tb):
    """The traceback `tb` with the frames of `HELPERS` unlinked (all of them kept where
    nothing else would be left)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [t for t in frames if t.tb_frame.f_globals.get("__name__") not in HELPERS]
    if not kept or len(kept) == len(frames):
        return frames[0] if frames else None
    for earlier, later in zip(kept, kept[1:], strict=False):
        earlier.tb_next = later
    kept[-1].tb_next = None
    return kept[0]


def install(shell=None) -> bool:
    """Fit the messages of every traceback `shell` (the running IPython shell) shows.
    Returns whether there was a shell to install into; installing twice changes nothing."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    formatter = getattr(shell, "InteractiveTB", None)
    if formatter is None:
        return False
    if getattr(formatter, "_course_fits_messages", False):
        return True
    original = formatter.structured_traceback

    def structured_traceback(etype, evalue, etb=None, *args, **kwargs):
        try:
            etb = without_helpers(etb)
        except Exception:  # noqa: BLE001 - a traceback is never lost to its formatting
            pass
        stb = original(etype, evalue, etb, *args, **kwargs)
        try:
            name = etype.__name__ if isinstance(etype, type) else type(evalue).__name__
            if stb and isinstance(stb[-1], str):
                stb = [*stb[:-1], fit_exception_line(stb[-1], name)]
        except Exception:  # noqa: BLE001 - a traceback is never lost to its formatting
            pass
        return stb

    formatter.structured_traceback = structured_traceback
    formatter._course_fits_messages = True
    return True
