"""`course-grade export`: the class's results as the CSV Canvas's gradebook import takes
(autograder.term.lms), from results kept the way class grading keeps them. Fast: no kernel."""

from __future__ import annotations

import csv
import zipfile

import pytest

from autograder import cli
from autograder.cells import read_notebook
from autograder.errors import CourseError
from autograder.grading import store
from autograder.grading.intake import canvas_user_id
from autograder.term import canvas, lms
from conftest import ROOT

A, NB = "01-autodiff", "autodiff.ipynb"
COLUMN = f"{A} (12345)"  # as Canvas heads the assignment's column in its export
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def release():
    return read_notebook(ROOT / "notebooks" / A / NB)


def full_marks() -> float:
    return sum(c["max_score"] for c in store.zero_cells(release()).values())


def result(student: str, origin: str, fraction: float) -> store.Result:
    """A result of 01-autodiff scoring `fraction` of each graded cell's points."""
    cells = store.zero_cells(release())
    for cell in cells.values():
        cell["score"] = cell["max_score"] * fraction
    return store.Result(student, A, NB, origin, "digest", "assignment-digest", cells=cells)


def write_roster(path, points: str, columns=(COLUMN, "Quiz 2 (777)"), people=None):
    """A roster as Canvas's Grades > Export writes it: the points row, a posting-policy
    row, the read-only totals at the end."""
    people = people or [("Doe, Jane", "101", "S001", "jdoe", "Section A"),
                        ("Roe, Rick", "102", "S002", "rroe", "Section A"),
                        ("Lee, Kim", "103", "S003", "klee", "Section B"),
                        ("Poe, Ed", "104", "S004", "epoe", "Section B")]
    extra = ["Current Score", "Unposted Current Score", "Final Score"]
    with open(path, "w", newline="", encoding="utf-8-sig") as handle:  # Canvas: a BOM
        writer = csv.writer(handle)
        writer.writerow([*CANVAS_HEADER, *columns, *extra])
        writer.writerow(["    Points Possible", "", "", "", "", points, "5.00",
                         *["(read only)"] * 3])
        writer.writerow(["", "", "", "", "", "Manual Posting", "", "", "", ""])
        for person in people:
            writer.writerow([*person, "", "3", "50", "50", "40"])
    return path


@pytest.fixture
def graded(tmp_path):
    """OUT/results/ as class grading leaves it after grading a Canvas download (and one
    nbgrader-layout folder); the roster Canvas exported."""
    out = tmp_path / "grading"
    for r in [result("doejane", f"doejane_101_9001_{NB}", 1.0),
              result("roerick", "roerick_LATE_102_9002_autodiff-1.ipynb", 0.5),
              result("epoe", f"submitted/epoe/{A}/{NB}", 0.25),  # no Canvas ids
              result("zedzed", f"zedzed_999_9003_{NB}", 1.0)]:  # not in the roster
        store.save_result(out, r)
    roster = write_roster(tmp_path / "canvas-export.csv", canvas.number(full_marks()))
    return out, roster


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.grade_main(["export", *argv])
    said = capsys.readouterr()
    return code, said.out, said.err


def read_rows(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_user_ids_are_read_from_the_download_file_names():
    assert canvas_user_id(f"doejane_101_9001_{NB}") == "101"
    assert canvas_user_id("folder/roerick_LATE_102_9002_autodiff-1.ipynb") == "102"
    assert canvas_user_id(f"submitted/epoe/{A}/{NB}") is None
    assert canvas_user_id(f"ada_{NB}") is None and canvas_user_id("") is None


def test_export_writes_what_canvas_imports_column_by_column(graded, capsys):
    out, roster = graded
    code, said, err = run(capsys, "--out", str(out), "--roster", str(roster))
    assert code == 0, err
    rows = read_rows(out / lms.CANVAS_CSV)
    full = canvas.number(full_marks())
    assert rows[0] == [*CANVAS_HEADER, COLUMN]  # the roster's column, its Canvas id kept
    assert rows[1] == ["Points Possible", "", "", "", "", full]
    assert [r[:5] for r in rows[2:]] == [
        ["Doe, Jane", "101", "S001", "jdoe", "Section A"],
        ["Roe, Rick", "102", "S002", "rroe", "Section A"],
        ["Lee, Kim", "103", "S003", "klee", "Section B"],
        ["Poe, Ed", "104", "S004", "epoe", "Section B"]]  # the roster's rows, its order
    assert [r[5] for r in rows[2:]] == [full, canvas.number(full_marks() / 2), "0",
                                        canvas.number(full_marks() / 4)]
    assert "1 without a submission get 0: Lee, Kim" in said
    assert "epoe -> Poe, Ed (by SIS Login ID)" in said
    assert "warning: 1 graded student(s) are not in the roster" in said
    assert f"zedzed (Canvas ID 999 is not in the roster): {A} {full}/{full}" in said
    assert not list(out.glob(".*.tmp"))


def test_the_per_exercise_csv_holds_every_graded_student(graded, capsys):
    out, roster = graded
    assert run(capsys, "--out", str(out), "--roster", str(roster))[0] == 0
    rows = read_rows(out / lms.EXERCISES_CSV)
    assert rows[0] == ["student", "assignment", "exercise", "score", "max"]
    assert {r[0] for r in rows[1:]} == {"doejane", "roerick", "epoe", "zedzed"}
    jane = [r for r in rows[1:] if r[0] == "doejane"]
    assert {r[1] for r in jane} == {A} and len(jane) > 1
    assert sum(float(r[3]) for r in jane) == pytest.approx(full_marks())
    assert all(r[3] == r[4] for r in jane)


def test_columns_map_to_canvas_assignments_and_new_ones_are_said(graded, capsys):
    out, roster = graded
    code, said, _ = run(capsys, "--out", str(out), "--roster", str(roster),
                        "--column", f"{A}=Quiz 2", "--output", str(out / "mapped.csv"))
    assert code == 0 and read_rows(out / "mapped.csv")[0][5] == "Quiz 2 (777)"
    assert "Canvas gives 'Quiz 2 (777)' 5.00 points" in said  # the course's differ
    no_column = write_roster(out.parent / "other.csv", "12", columns=("Essay (5)", "Quiz"))
    code, said, _ = run(capsys, "--out", str(out), "--roster", str(no_column))
    assert code == 0 and read_rows(out / lms.CANVAS_CSV)[0][5] == A
    assert f"the roster has no column '{A}'" in said


def test_students_are_matched_by_id_then_sis_ids_then_name(tmp_path):
    roster = canvas.read_roster(write_roster(
        tmp_path / "r.csv", "12", people=[("Lee, Kim", "103", "S003", "klee", "B"),
                                          ("Smith, Al", "105", "", "asmith1", "B"),
                                          ("Smith, Al", "106", "", "asmith2", "B")]))
    results = [result(s, f"submitted/{s}/{A}/{NB}", 1.0)
               for s in ("103", "s003", "kimlee", "smithal", "nobody")]
    matches, missing = lms.match_students(results, roster)
    assert {s: (m.person.canvas_id, m.how) for s, m in matches.items()} == {
        "103": ("103", "Canvas ID"), "s003": ("103", "SIS User ID"),
        "kimlee": ("103", "name")}
    assert missing["smithal"] == "2 roster students have that name"
    assert "no roster ID or name matches" in missing["nobody"]
    with pytest.raises(CourseError, match="both match Lee, Kim"):
        lms.scores_by_person(results, matches)


def test_bad_input_is_one_sentence_and_writes_nothing(graded, capsys, tmp_path):
    out, roster = graded
    (out / lms.CANVAS_CSV).write_text("before")
    not_canvas = tmp_path / "scores.csv"
    not_canvas.write_text("name,score\nada,3\n")
    cases = [(["--out", str(tmp_path / "nowhere"), "--roster", str(roster)],
              "results does not exist"),
             (["--out", str(out), "--roster", str(not_canvas)],
              "is not Canvas's gradebook export"),
             (["--out", str(out), "--roster", str(tmp_path / "none.csv")], "does not exist"),
             (["--out", str(out), "--roster", str(roster), "-a", "nope"],
              "There is no assignment 'nope'"),
             (["--out", str(out), "--roster", str(roster), "-a", "02-gather-gradients"],
              "No result of 02-gather-gradients"),
             (["--out", str(out), "--roster", str(roster), "--column", "02-x=Quiz"],
              "not exported here"),
             (["--out", str(out), "--roster", str(roster), "--column", "Quiz"],
              "ASSIGNMENT=CANVAS_COLUMN")]
    for argv, expected in cases:
        code, said, err = run(capsys, *argv)
        assert (code, said) == (2, ""), argv
        assert expected in err and err.count("\n") == 1, err
    assert (out / lms.CANVAS_CSV).read_text() == "before"
    assert not (out / lms.EXERCISES_CSV).exists()


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    class Unprintable:
        def __str__(self):
            raise RuntimeError("disk full")

    path = tmp_path / "grades.csv"
    canvas.write_csv(path, [["a", "b"], ["1", "2"]])
    with pytest.raises(RuntimeError):
        canvas.write_csv(path, [["a", "b"]] * 1000 + [[Unprintable()]])
    assert read_rows(path) == [["a", "b"], ["1", "2"]]
    assert [p.name for p in tmp_path.iterdir()] == ["grades.csv"]


def test_the_score_that_counts_is_after_the_late_policy(graded, capsys, monkeypatch):
    out, roster = graded
    (out / "gradebook.db").touch()  # how late each was: nbgrader's gradebook, read here
    monkeypatch.setattr(lms, "lateness", lambda _: {("roerick", A): 1.5 * 86400})
    policy = out.parent / "late.toml"
    policy.write_text("percent_per_day = 10\n")
    code, said, err = run(capsys, "--out", str(out), "--roster", str(roster),
                          "--late-policy", str(policy))
    assert code == 0, err
    rick = read_rows(out / lms.CANVAS_CSV)[3]
    assert rick[:2] == ["Roe, Rick", "102"]
    assert rick[5] == canvas.number(full_marks() / 2 * 0.8)  # 2 started days: -20%
    assert f"late: roerick {A}: submitted 1 d 12 h" in said


def test_two_canvas_students_of_one_name_are_warned_of_at_intake(tmp_path):
    from autograder.grading import intake

    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as z:  # Canvas names the files by name: both smithal
        z.writestr(f"smithal_105_1_{NB}", b"{}")
        z.writestr(f"smithal_106_2_{NB}", b"{}")
    said = []
    subs = intake.collect(ROOT, archive, [A], log=said.append)
    assert [s.student for s in subs] == ["smithal"]
    assert any("smithal are of 2 Canvas users (ids 105, 106)" in line for line in said)


def test_export_uses_the_policy_the_folder_keeps(graded, capsys, monkeypatch):
    """`export` without --late-policy after `class --late-policy FILE`: the folder kept it
    (autograder.grading.rules); Canvas's _LATE_ mark without a time is named."""
    import argparse

    from autograder.grading import rules

    out, roster = graded
    (out / "gradebook.db").touch()
    monkeypatch.setattr(lms, "lateness", lambda _: {("roerick", A): 1.5 * 86400})
    policy = out.parent / "late.toml"
    policy.write_text("percent_per_day = 10\n")
    args = argparse.Namespace(late_policy=str(policy), no_late_policy=False, due=[])
    rules.keep(out, rules.settle(ROOT, out, args, {"late_policy"}))  # as `class` keeps it
    policy.unlink()
    code, said, err = run(capsys, "--out", str(out), "--roster", str(roster))
    assert code == 0, err
    rick = read_rows(out / lms.CANVAS_CSV)[3]
    assert rick[5] == canvas.number(full_marks() / 2 * 0.8)  # 2 started days: -20%
    assert "late policy: 10% off per started day late (late.toml, given with --late-policy;" \
           " kept in" in said
    assert "note: Canvas marked 1 submission(s) _LATE_ (roerick 01-autodiff)" not in said
    store.save_result(out, result("lateone", f"lateone_LATE_103_9004_{NB}", 1.0))
    code, said, err = run(capsys, "--out", str(out), "--roster", str(roster))
    assert "note: Canvas marked 1 submission(s) _LATE_ (lateone 01-autodiff)" in said, said


def test_export_with_a_new_policy_rewrites_grades_csv_to_match(graded, capsys, monkeypatch):
    """An export given another late policy than the folder's keeps it, and grades.csv and
    the feedback pages follow it, so that no file disagrees with the Canvas one."""
    import shutil

    from autograder.grading import reports, rules

    out, roster = graded
    (out / "gradebook.db").touch()
    (out / "notebooks" / A).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / A / NB, out / "notebooks" / A / NB)
    late = {("roerick", A): 1.5 * 86400}
    monkeypatch.setattr(lms, "lateness", lambda _: late)
    monkeypatch.setattr(reports, "lateness", lambda _: late)
    policy = out.parent / "late.toml"
    policy.write_text("percent_per_day = 10\n")
    code, said, err = run(capsys, "--out", str(out), "--roster", str(roster),
                          "--late-policy", str(policy))
    assert code == 0, err
    assert rules.load(out)["late"]["table"]["percent_per_day"] == 10
    with open(out / "grades.csv", newline="") as handle:
        rick = {r["student"]: r for r in csv.DictReader(handle)}["roerick"]
    assert rick["total"] == canvas.number(full_marks() / 2 * 0.8) == \
        read_rows(out / lms.CANVAS_CSV)[3][5]
