"""Check, in one clear sentence each, that the course's pinned packages are present."""

from __future__ import annotations

import importlib.metadata

# What the course was checked on (pyproject.toml pins the same).
REQUIRED = {"tensorflow": "2.21", "keras": "3.15"}
FIX = "run `make lab` (or `pip install -e ./library -e .`) from the course folder"


class EnvironmentProblem(ImportError):
    """A package is missing or has a version the course was not checked on."""


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def problems(required: dict[str, str] = REQUIRED, version_of=installed_version) -> list[str]:
    """One sentence per missing package or wrong version; empty when all is well."""
    found = []
    for package, series in required.items():
        version = version_of(package)
        if version is None:
            found.append(f"{package} {series}.x is not installed: {FIX}.")
        elif not (version == series or version.startswith(series + ".")):
            found.append(
                f"This course needs {package} {series}.x but {version} is installed: {FIX}."
            )
    return found


def check_environment() -> None:
    """Raise EnvironmentProblem with a clear sentence when a pinned package is wrong."""
    found = problems()
    if found:
        raise EnvironmentProblem(" ".join(found))
