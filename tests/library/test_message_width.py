"""Every error message whole at Validate's width (embeddings_course.messages)."""

import sys

import pytest

from embeddings_course import checks, messages

LONG = ("rows_changed of a table of shape (0, 3): got ValueError (cannot reshape array of "
        "size 0 into shape (0,newaxis)), expected [].\nHint: a table with no rows has no "
        "changed rows; reshape(len(x), -1) cannot infer -1 when there are no entries.")


def test_fit_carries_words_to_the_next_line_and_drops_none():
    fitted = messages.fit(LONG, first_width=60)
    lines = fitted.splitlines()
    assert len(lines[0]) <= 60 and all(len(line) <= messages.WIDTH for line in lines)
    assert fitted.split() == LONG.split()  # the same words, in order
    assert lines[0].startswith("rows_changed of a table of shape (0, 3): got")
    assert any(line.startswith("Hint: ") for line in lines)  # a line of its own stays one
    word = "x" * 200  # a word longer than a line is split, not lost
    assert "".join(messages.fit(word).split()) == word
    assert messages.fit("short\n\nlines") == "short\n\nlines"


def ipython_traceback(raiser) -> list[str]:
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    assert messages.install(shell) and messages.install(shell)  # twice: once
    try:
        raiser()
    except Exception:
        etype, value, tb = sys.exc_info()
    stb = shell.InteractiveTB.structured_traceback(etype, value, tb)
    return messages.visible(shell.InteractiveTB.stb2text(stb)).splitlines()


def test_an_ipython_shell_shows_any_exception_s_message_fitted():
    def plain():
        raise AssertionError(LONG)

    lines = ipython_traceback(plain)
    start = next(i for i, line in enumerate(lines) if line.startswith("AssertionError: "))
    message = lines[start:]
    assert all(len(line) <= messages.WIDTH for line in message), message
    assert " ".join(message).split() == ["AssertionError:", *LONG.split()]


def test_a_failing_check_shows_the_calling_line_and_not_the_helper_s_code():
    def failing_test_cell():
        checks.check_close([1.0, 2.0], [1.0, 3.0], name="w after one step")

    text = "\n".join(ipython_traceback(failing_test_cell))
    assert "failing_test_cell" in text and "w after one step" in text
    assert "def _fail" not in text and "raise CheckFailed(message)" not in text
    assert "CheckFailed: w after one step: got 2 at index (1,), expected 3." in text


def test_outside_ipython_nothing_is_installed():
    assert messages.install(object()) is False
