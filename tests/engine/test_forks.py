"""The fork server's side (autograder.engine.sandboxed.forks), in this process: a child that cannot
set up its kernel says why, word for word, and a request that fails costs the server no
file descriptor (it serves many kernels)."""

from __future__ import annotations

import os

import pytest

from autograder.engine.sandboxed import forks


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


def test_a_fresh_tmpfs_keeps_only_the_folders_beneath_it_that_exist(tmp_path):
    """What a forked kernel binds back over its fresh /tmp or home: the needed folders
    beneath it, none twice (one inside another comes with it), nothing outside it."""
    from autograder.engine.sandboxed import namespaces

    venv, library = tmp_path / "my course" / ".venv", tmp_path / "my course" / "lib"
    for folder in (venv / "lib", library):
        folder.mkdir(parents=True)
    wanted = [str(venv), str(venv / "lib"), str(library), str(tmp_path / "absent"),
              "/usr", str(tmp_path), str(tmp_path) + "-other"]
    assert namespaces.beneath(str(tmp_path), wanted) == [str(venv), str(library)]


def test_the_cold_sandbox_mounts_its_fresh_folders_before_any_bind(tmp_path):
    """bubblewrap mounts in the order given: the kernel's /tmp and home come first, so a
    checkout beneath them (/tmp/..., /home/student/...) is not covered; only its Python and
    packages are bound, read-only, never the checkout itself."""
    from autograder.engine.trusted import sandbox
    from conftest import ROOT

    args = sandbox.command(tmp_path, {"A": "b c"}, 64)
    fresh = [args.index(target) for target in ("/tmp", sandbox.HOME, "/dev/shm")]
    binds = [i for i, arg in enumerate(args) if arg in ("--ro-bind", "--bind")]
    assert max(fresh) < min(i for i in binds if args[i + 1] not in ("/usr",) and
                            not args[i + 1].startswith(("/bin", "/lib", "/sbin", "/etc")))
    bound = {args[i + 2] for i in binds}
    assert str(ROOT) not in bound and str(ROOT / "autograder") in bound
    assert {target for _, target in sandbox.python_binds()} <= bound
