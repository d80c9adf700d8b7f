"""The fork server's side (autograder.engine.forks), in this process: a child that cannot
set up its kernel says why, word for word, and a request that fails costs the server no
file descriptor (it serves many kernels)."""

from __future__ import annotations

import os

import pytest

from autograder.engine import forks


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_child_that_fails_says_why_and_leaves_no_descriptor(monkeypatch):
    children = []
    real_fork = forks._fork

    def fork_and_note(*args, **kwargs):
        children.append(real_fork(*args, **kwargs))
        return children[-1]

    def isolate_fails(request, report):
        raise ValueError("no room for the kernel's home")

    monkeypatch.setattr(forks, "_fork", fork_and_note)
    monkeypatch.setattr(forks, "_isolate", isolate_fails)
    before = open_descriptors()
    with pytest.raises(forks.ChildFailed) as failed:
        forks._fork_kernel({})
    assert str(failed.value) == "ValueError: no room for the kernel's home"
    _, status = os.waitpid(children[0], 0)
    assert os.waitstatus_to_exitcode(status) == 70
    assert open_descriptors() == before


def test_a_fork_that_fails_leaves_no_descriptor(monkeypatch):
    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forks.os, "fork", no_fork)
    before = open_descriptors()
    with pytest.raises(BlockingIOError):
        forks._fork_kernel({})
    assert open_descriptors() == before
