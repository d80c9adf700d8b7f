"""What the engine knows about a course comes from its pyproject.toml, not from the
engine's code (autograder.course.facts)."""

from __future__ import annotations

import pytest

from autograder import course
from autograder.engine.trusted import sandbox, withheld
from autograder.errors import CourseError
from conftest import ROOT


def test_this_course_names_its_library_preload_mirrors_and_observations():
    facts = course.facts(ROOT)
    assert facts.library == ("embeddings_course", "sparse_embeddings")
    assert "keras" in facts.preload
    assert withheld.mirrors()["deduplicate"]
    assert set(sandbox._package_dirs()) == {"autograder", "embeddings_course",
                                            "sparse_embeddings"}
    # the library's own folder, library/src: the folders show which is which
    assert sandbox._package_dirs()["sparse_embeddings"] == str(
        ROOT / "library" / "src" / "sparse_embeddings")


def test_a_library_of_one_package_or_several(tmp_path):
    for folder, value, packages in (("one", '"lib"', ("lib",)),
                                    ("two", '["helpers", "lib"]', ("helpers", "lib"))):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(
            f"[tool.course-grade]\nlibrary = {value}\n")
        assert course.facts(tmp_path / folder).library == packages


def test_a_course_without_the_table_gets_none_of_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "ps1"\n')
    assert course.facts(tmp_path) == course.Facts()
    assert course.facts(tmp_path / "elsewhere") == course.Facts()  # no pyproject at all


@pytest.mark.parametrize("table", ['library = 3', 'library = ["a", 3]', 'preload = "keras"',
                                   'colour = "red"',
                                   'library = "a"\n[broken'])
def test_a_table_it_cannot_use_is_named_in_one_sentence(tmp_path, table):
    (tmp_path / "pyproject.toml").write_text(f"[tool.course-grade]\n{table}\n")
    with pytest.raises(CourseError) as error:
        course.facts(tmp_path)
    assert str(error.value).count(". ") == 0 and "pyproject.toml" in str(error.value)
