"""A class on the course's JupyterHub (`course hub`, `make class`), played in a real browser.

The hub runs on localhost with throw-away accounts (created and removed by the test), its
own exchange and free ports, all from one hub.toml written here. In Debian's chromium:

- the instructor sets due dates (01 already past, 03 ahead) and releases 01 and 03 in the
  formgrader;
- two students log in, fetch both from the Assignments tab, answer (ada fully, bob partly),
  press Validate and submit; ada submits 01 twice (the second, complete one counts);
- the hub is stopped and started again (nothing is lost);
- the instructor collects, autogrades with the course's sandboxed grader in a JupyterLab
  terminal (`course-grade class --late-policy late.toml`: ada's late 01 loses the capped
  penalty, bob's has an extension), grades 03's written answer in the formgrader, generates
  and releases feedback (nbgrader's pages show the totals of grades.csv, the late
  penalty included: autograder.grading.feedback.CourseLatePenalty);
- each student fetches feedback in the Assignments tab and sees their own score, and no
  hidden test; a student cannot read another's work, the exchange's inbound or the
  instructor's files.

Screenshots of each step: test-artifacts/hub/NN-step.png. Needs root (accounts), npm
(JupyterHub's proxy) and chromium.
"""

from __future__ import annotations

import csv
import html
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support import filled_notebook, free_port, slug

from autograder.cells import (
    grade_id,
    is_answer,
    is_manual,
    nbgrader_meta,
    read_notebook,
    write_notebook,
)
from autograder.engine.trusted import submission
from autograder.errors import CourseError
from autograder.hub import server, setup
from autograder.hub.setup import home
from conftest import ROOT, SOLUTIONS

ARTIFACTS = ROOT / "test-artifacts" / "hub"
TEACHER, ADA, BOB = "cht-teacher", "cht-ada", "cht-bob"  # cht: course hub test
A1, A3 = "01-autodiff", "03-sparse-updates"
NB = {A1: "autodiff.ipynb", A3: "sparse_updates.ipynb"}
PASSWORDS = {TEACHER: "teacher-pass-1", ADA: "ada-pass-123", BOB: "bob-pass-123"}


def write_config(where: Path, **changes) -> Path:
    values = {"ip": "127.0.0.1", "port": free_port(), "hub_port": free_port(),
              "proxy_api_port": free_port(), "folder": str(where / "hub"),
              "exchange": str(where / "exchange"), **changes}
    lines = ["[hub]"] + [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}"
                         for k, v in values.items()]
    lines += ["[instructor]", f'name = "{TEACHER}"', f'password = "{PASSWORDS[TEACHER]}"',
              'course = "course"', "[students]"]
    lines += [f'{name} = "{PASSWORDS[name]}"' for name in (ADA, BOB)]
    path = where / "hub.toml"
    path.write_text("\n".join(lines).replace("'", '"') + "\n")
    return path


# --- the config file: one sentence for each mistake ----------------------------------------

@pytest.mark.parametrize("change, words", [
    ({"port": 8001, "proxy_api_port": 8001}, "three different ports"),
    ({"exchange": "/srv/x/hub/exchange", "folder": "/srv/x/hub"}, "cannot be inside"),
    ({"folder": "relative/hub"}, "absolute paths"),
])
def test_hub_config_mistakes_are_named(tmp_path, change, words):
    with pytest.raises(CourseError, match=words):
        setup.load(write_config(tmp_path, **change))


def test_hub_config_accounts_and_passwords_are_checked(tmp_path):
    path = write_config(tmp_path)
    config = setup.load(path)
    assert config.passwords == PASSWORDS and config.instructor == TEACHER
    text = path.read_text()
    for bad, words in [(text.replace(PASSWORDS[ADA], "short"), "at least 8"),
                       (text.replace(f"{BOB} =", '"Bob!" ='), "cannot be an account name"),
                       (text.replace(f"{BOB} =", f"{TEACHER} ="), "the instructor and a student"),
                       (text.replace("[students]", "[others]"), "at least one account"),
                       (text + "[[broken", "not valid TOML")]:
        path.write_text(bad)
        with pytest.raises(CourseError, match=re.escape(words)):
            setup.load(path)
    with pytest.raises(CourseError, match="No hub config"):
        setup.load(tmp_path / "missing.toml")


def test_a_closed_folder_on_the_way_to_the_course_is_named(tmp_path):
    closed = tmp_path / "closed"
    (closed / "course").mkdir(parents=True)
    closed.chmod(0o700)
    assert closed in setup.closed_folders(closed / "course")
    with pytest.raises(CourseError, match=f"cannot enter .*{closed}.*chmod o\\+x"):
        setup._check_readable(closed / "course")


def test_the_course_hub_toml_is_valid():
    config = setup.load(ROOT / "hub.toml")
    assert config.url == "http://127.0.0.1:8000" and len(config.students) >= 2


# --- the whole loop in a browser -----------------------------------------------------------

def remove_accounts() -> None:
    server._end_processes_of(PASSWORDS)
    for name in PASSWORDS:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


@pytest.fixture(scope="module")
def class_hub():
    if os.geteuid() != 0:
        pytest.skip("the class hub test creates accounts: it runs as root (as CI does)")
    if shutil.which("npm") is None:
        pytest.fail("JupyterHub's proxy needs npm: `apt-get install npm` (make test does).")
    remove_accounts()  # from a run that was killed
    folder = Path(tempfile.mkdtemp(prefix="course-hub-test-"))
    folder.chmod(0o755)
    config = setup.load(write_config(folder))
    # The accounts run the course's Python; where it lies under a closed folder (pyenv in
    # /root on the course machines), the test lets them in, as `make class` asks, and
    # closes it again afterwards.
    closed = {path: path.stat().st_mode for path in setup.closed_folders(ROOT)}
    for path in closed:
        path.chmod(closed[path] | 0o001)
    state = {"config": config, "folder": folder}
    try:
        setup.setup(config, ROOT, log=print)
        state["hub"] = server.Hub(config, ROOT)
        yield state
    finally:
        if "hub" in state:
            state["hub"].stop()
        remove_accounts()
        for path, mode in closed.items():
            path.chmod(mode)
        shutil.rmtree(folder, ignore_errors=True)
        left = [p for p in _processes() if "course-hub-test-" in p or "jupyterhub" in p]
        assert not left, left


def _processes() -> list[str]:
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if "configurable-http-proxy" in line or "jupyterhub" in line:
            found.append(line)
    return found


class Person:
    """One person's browser context on the hub, with numbered screenshots."""

    step = 0

    def __init__(self, browser, config: setup.HubConfig, name: str):
        self.config, self.name = config, name
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(90_000)

    def url(self, path: str) -> str:
        return f"{self.config.url}/user/{self.name}/{path.lstrip('/')}"

    def shot(self, what: str) -> None:
        Person.step += 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.wait_for_timeout(300)
        self.page.screenshot(path=str(ARTIFACTS / f"{Person.step:02d}-{self.name}-"
                                                  f"{slug(what)}.png"))

    def log_in(self) -> None:
        page = self.page
        page.goto(f"{self.config.url}/hub/login")
        page.fill("#username_input", self.name)
        page.fill("#password_input", PASSWORDS[self.name])
        self.shot("login")
        page.click("#login_submit")
        page.wait_for_url(re.compile(rf".*/user/{self.name}/lab.*"), timeout=180_000)
        page.wait_for_selector(".lm-MenuBar-itemLabel:text-is('Nbgrader')", timeout=120_000)
        self.shot("logged in")

    def close(self) -> None:
        self.context.close()

    # --- the instructor's formgrader
    def formgrader(self) -> None:
        self.page.goto(self.url("formgrader/manage_assignments"))
        self.page.wait_for_selector("td.name a")

    def assignment_row(self, assignment: str):
        return self.page.locator("tr", has=self.page.locator(
            "td.name a", has_text=re.compile(f"^{assignment}$")))

    def formgrader_action(self, assignment: str, column: str) -> str:
        """Click the icon in `column` of the assignment's row; the dialog's text."""
        self.assignment_row(assignment).locator(f"td.{column} a").click()
        dialog = self.page.wait_for_selector("#success-modal, #error-modal", timeout=180_000)
        text = dialog.inner_text()
        self.shot(f"{column} {assignment}")
        self.page.click(".modal.in .modal-footer .close")
        self.page.wait_for_selector(".modal", state="detached")
        assert dialog.get_attribute("id") == "success-modal", text
        return text

    def set_due_date(self, assignment: str, when: str) -> None:
        self.assignment_row(assignment).locator("td.edit a").click()
        self.page.fill("#edit-assignment-modal input.modal-duedate", when)
        self.page.fill("#edit-assignment-modal input.modal-timezone", "UTC")
        self.shot(f"due date {assignment}")
        self.page.click("#edit-assignment-modal button.save")
        self.page.wait_for_selector("#edit-assignment-modal", state="detached")

    # --- the students' Assignments tab
    def assignments_tab(self) -> None:
        page = self.page
        page.goto(self.url("lab?reset"))
        page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
        page.click(".lm-Menu-item[data-command='nbgrader:open-assignment-list']")
        page.wait_for_selector("#released_assignments_list")
        page.wait_for_timeout(1500)

    def list_button(self, listing: str, assignment: str, label: str):
        row = self.page.locator(f"#{listing}_assignments_list .list_item",
                                has_text=assignment)
        return row.locator(f"button:text-is('{label}')").first

    def press(self, listing: str, assignment: str, label: str, then: str) -> None:
        """Press `label` on the assignment's row in `listing`; wait until `then` lists it
        anew (a submission adds its time under the assignment's row)."""
        target = f"#{then}_assignments_list"
        before = self.page.inner_text(target)
        self.list_button(listing, assignment, label).click()
        self.page.wait_for_function(
            "([sel, text, before]) => { const t = document.querySelector(sel).innerText;"
            " return t !== before && t.includes(text); }",
            arg=[target, assignment, before], timeout=120_000)
        self.page.wait_for_timeout(500)
        self.shot(f"{label} {assignment}")


def as_user(name: str, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", name, "--", *command], capture_output=True,
                          text=True)


def answer(student: str, assignment: str, full: bool) -> None:
    """The student's fetched notebook with answers written in (all, 03's written one
    included, or the first only), as their editor would save it; owned by the student."""
    path = home(student) / assignment / NB[assignment]
    filled_notebook(path, SOLUTIONS / assignment / NB[assignment], path)
    if not full:
        nb = read_notebook(path)
        release = read_notebook(ROOT / "notebooks" / assignment / NB[assignment])
        blank = {grade_id(c): c.source for c in release.cells}
        answers = [c for c in nb.cells if is_answer(c) or is_manual(c)]
        for cell in answers[1:]:
            cell.source = blank[grade_id(cell)]
        write_notebook(nb, path)
    entry = pwd.getpwnam(student)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def validate(person: Person, assignment: str) -> str:
    page = person.page
    page.goto(person.url(f"lab/tree/{assignment}/{NB[assignment]}?reset"))
    page.wait_for_selector(".jp-NotebookPanel-toolbar .validate-button", timeout=120_000)
    page.click(".jp-NotebookPanel-toolbar .validate-button")
    dialog = page.wait_for_selector(".jp-Dialog", timeout=300_000)
    text = dialog.inner_text()
    person.shot(f"validate {assignment}")
    page.click(".jp-Dialog .jp-mod-accept")
    return text


def page_text(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def hidden_fragments(assignment: str) -> list[str]:
    seen = "\n".join(c.source for c in read_notebook(
        ROOT / "notebooks" / assignment / NB[assignment]).cells)
    fragments = []
    for cell in read_notebook(SOLUTIONS / assignment / NB[assignment]).cells:
        for block in submission.hidden_parts(cell.source):
            fragments += [line.strip() for line in block.splitlines()
                          if len(line.strip()) >= 30 and line.strip() not in seen]
    assert fragments
    return fragments


def give_manual_score(page, url: str, cell: str, value: str) -> None:
    """Type `value` into the formgrader's score of `cell` on the submission page at `url`,
    and see it saved. The page's grades arrive after its inputs, and a score typed before
    they did is neither saved nor kept (a test once generated feedback without it). So:
    wait for the formgrader's grades, type, wait for its PUT of the grade, reload, and
    read the score back."""
    loaded = "() => window.formgrader && formgrader.grades && formgrader.grades.loaded"
    for _ in range(3):
        page.goto(url)
        page.wait_for_function(loaded, timeout=60_000)
        with page.expect_response(lambda r: "/api/grade/" in r.url
                                  and r.request.method == "PUT", timeout=30_000):
            page.fill(f"input.score#{cell}", value)
            page.keyboard.press("Tab")
        page.reload()
        page.wait_for_function(loaded, timeout=60_000)
        if page.input_value(f"input.score#{cell}") == value:
            return
    raise AssertionError(f"the formgrader did not keep the score {value} of {cell}")


@pytest.mark.slow
@pytest.mark.browser
def test_a_class_from_release_to_feedback(class_hub, browser):
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    config = class_hub["config"]
    course_dir = config.course_dir

    # the instructor: due dates, then release 01 and 03
    teacher = Person(browser, config, TEACHER)
    teacher.log_in()
    teacher.formgrader()
    teacher.shot("formgrader")
    teacher.set_due_date(A1, "2026-01-01T09:00")
    teacher.set_due_date(A3, "2099-01-01T09:00")
    for assignment in (A1, A3):
        teacher.formgrader_action(assignment, "release")
    teacher.close()

    # the students: fetch, answer, validate, submit
    people = {}
    for student, full in ((ADA, True), (BOB, False)):
        person = people[student] = Person(browser, config, student)
        person.log_in()
        person.assignments_tab()
        person.shot("assignments")
        for assignment in (A1, A3):
            person.press("released", assignment, "Fetch", then="fetched")
        if student == ADA:  # a first, partial submission of 01; the second counts
            answer(ADA, A1, full=False)
            person.assignments_tab()
            person.press("fetched", A1, "Submit", then="submitted")
        for assignment in (A1, A3):
            answer(student, assignment, full)
            said = validate(person, assignment)
            assert ("Success" in said) == full, said
            person.assignments_tab()
            person.press("fetched", assignment, "Submit", then="submitted")
    inbound = config.exchange / setup.course_id(ROOT) / "inbound"
    assert len([p for p in inbound.iterdir() if p.name.startswith(ADA)]) == 3

    # permissions: nobody reads another's work, the inbound or the instructor's files
    for path in (inbound, home(ADA) / A1 / NB[A1], course_dir / "gradebook.db",
                 course_dir / "solutions"):
        assert as_user(BOB, "ls", str(path)).returncode != 0, path
    assert as_user(BOB, "cat", str(config.path)).returncode != 0  # hub.toml: the passwords

    # the hub restarts; nothing is lost
    for person in people.values():
        person.close()
    class_hub["hub"].stop()
    class_hub["hub"] = server.Hub(config, ROOT)

    # the instructor: collect, autograde with the course's grader, grade by hand, feedback
    teacher = Person(browser, config, TEACHER)
    teacher.log_in()
    teacher.formgrader()
    for assignment in (A1, A3):
        teacher.formgrader_action(assignment, "collect")
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == [ADA, BOB]
    # nbgrader, as the instructor, would autograde in the course's sandbox too
    loaded = as_user(TEACHER, "env", f"HOME={home(TEACHER)}", sys.executable, "-c",
                     "from nbgrader.apps.baseapp import NbGrader; a = NbGrader(); "
                     "a.load_config_file(); print(a.config.Autograde.autograde_preprocessors)")
    executor = "autograder.engine.trusted.executor.SandboxedExecute"
    assert executor in loaded.stdout, loaded.stderr[-2000:]
    page = teacher.page
    page.goto(teacher.url("lab?reset"))  # a fresh workspace opens on the Launcher
    page.click(".jp-LauncherCard[title='Start a new terminal session']")
    page.wait_for_selector(".jp-Terminal .xterm-helper-textarea", timeout=60_000)
    page.click(".jp-Terminal")
    done = course_dir / "grades.csv"
    # the class's late policy: 10% off per started day, at most 50%; bob has an extension
    policy = home(TEACHER) / "late.toml"
    policy.write_text(f'percent_per_day = 10\ncap_percent = 50\n'
                      f'extensions = {{ "{BOB}/{A1}" = 3650 }}\n')
    policy.chmod(0o644)
    page.keyboard.type(f"cd && course-grade class {config.course_name}/submitted --out "
                       f"{config.course_name} --late-policy late.toml 2>&1 | tee grading.log; "
                       "echo ${PIPESTATUS[0]} > grading.exit\n")
    exit_file, log_file = home(TEACHER) / "grading.exit", home(TEACHER) / "grading.log"
    for _ in range(900):
        if exit_file.exists() and exit_file.read_text().strip():
            break
        page.wait_for_timeout(1000)
    teacher.shot("course-grade in a terminal")
    said = log_file.read_text() if log_file.exists() else "(no log)"
    assert exit_file.exists() and exit_file.read_text().strip() == "0", said[-3000:]
    assert re.search(r"graded \d+ submission", said), said[-3000:]
    rows = {row["student"]: row for row in csv.DictReader(open(done))}
    assert float(rows[ADA]["raw"]) > float(rows[BOB]["raw"]) > 0
    # ada's second, complete submission of 01 is the one graded: full marks
    points = sum(nbgrader_meta(c).get("points", 0) for c in read_notebook(
        SOLUTIONS / A1 / NB[A1]).cells if nbgrader_meta(c).get("grade"))
    assert float(rows[ADA][f"{A1}/raw"]) == points > float(rows[BOB][f"{A1}/raw"])
    assert f"{A1}: submitted" in rows[ADA]["problems"] and "after the due date" in \
        rows[ADA]["problems"]
    assert f"{A3}: submitted" not in rows[ADA]["problems"]
    # the late policy: ada's 01, months after its due date, loses the most (50%); bob's
    # extension covers his; 03 is on time
    assert float(rows[ADA][f"{A1}/total"]) == points / 2
    assert "\u221250% (the cap)" in rows[ADA]["problems"]
    assert rows[BOB][f"{A1}/total"] == rows[BOB][f"{A1}/raw"]
    assert "within the extension, no penalty" in rows[BOB]["problems"]
    assert rows[ADA][f"{A3}/total"] == rows[ADA][f"{A3}/raw"]
    assert "late policy: 10% off per started day late, at most 50%" in said, said[-3000:]
    ada_page = (course_dir / "feedback" / ADA / f"{A1}.html").read_text()
    assert f"{points / 2:g} of {points:g} points after the late penalty" in ada_page
    assert "Late: submitted" in ada_page and "\u221250% (the cap)" in ada_page

    # 03's written answer, graded in the formgrader
    manual = next(grade_id(c) for c in read_notebook(SOLUTIONS / A3 / NB[A3]).cells
                  if is_manual(c))
    page.goto(teacher.url(f"formgrader/gradebook/{A3}/{NB[A3][:-6]}"))
    link = page.wait_for_selector(f"a.name-shown:text-is('{ADA}')", state="attached")
    give_manual_score(page, config.url + link.get_attribute("href"), manual, "2")
    teacher.shot("manual grade")
    teacher.formgrader()
    for assignment in (A1, A3):
        teacher.formgrader_action(assignment, "generate-feedback")
        teacher.formgrader_action(assignment, "release-feedback")
    teacher.close()

    # each student: feedback in the Assignments tab, their own score, no hidden test
    for student in (ADA, BOB):
        person = Person(browser, config, student)
        person.log_in()
        person.assignments_tab()
        for assignment in (A1, A3):
            person.list_button("submitted", assignment, "Fetch Feedback").click()
            person.page.wait_for_selector(
                f"#submitted_assignments_list .list_item:has-text('{assignment}') "
                "a:has-text('view feedback')", timeout=120_000)
        person.shot("feedback fetched")
        for assignment in (A1, A3):
            page_path = sorted((home(student) / assignment / "feedback").glob(
                f"*/{NB[assignment][:-6]}.html"))[-1]
            person.page.goto(person.url(
                f"files/{page_path.relative_to(home(student))}"))
            person.shot(f"feedback {assignment}")
            shown = page_text(person.page.content())
            # the total of grades.csv, late penalty included (one score, whichever page)
            expected = rows[student][f"{assignment}/total"]
            if assignment == A3 and student == ADA:
                expected = f"{float(expected) + 2:g}"
            assert re.search(rf"Score: {float(expected):.1f} / \d", shown), (expected, shown[:400])
            assert ("Late submission penalty" in shown) == (
                rows[student][f"{assignment}/total"] != rows[student][f"{assignment}/raw"])
            leaks = [f for f in hidden_fragments(assignment) if f in shown]
            assert not leaks, leaks[:3]
            assert student in str(page_path) and all(
                other not in shown for other in (ADA, BOB) if other != student)
        person.close()


@pytest.mark.slow
@pytest.mark.browser
def test_the_course_hub_command_starts_and_stops_cleanly(class_hub):
    """`course hub --config FILE` (what `make class` runs) set up again over a class in
    progress, served, and stopped by Ctrl-C with everything it started, even when started
    with SIGINT ignored (as a shell starts a background job; it once outlived the test
    that way)."""
    import signal
    import threading
    import time
    import urllib.request

    config = class_hub["config"]
    class_hub["hub"].stop()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "course"), "hub", "--config", str(config.path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    said = []  # what it printed, line by line, read as it goes
    reader = threading.Thread(target=lambda: said.extend(process.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        # ready once it says where it is (the API answers a moment before that line)
        while not any(f"The class hub is at {config.url}" in line for line in said):
            assert process.poll() is None and time.monotonic() < deadline, "".join(said)[-3000:]
            time.sleep(0.5)
        with urllib.request.urlopen(f"{config.url}/hub/api/", timeout=10) as answer:
            assert answer.status == 200
        process.send_signal(signal.SIGINT)
        process.wait(90)
        reader.join(30)
    finally:
        if process.poll() is None:  # a failed check above: end it and what it started
            process.send_signal(signal.SIGINT)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                process.terminate()  # serve() stops the hub on SIGTERM too
                process.wait(90)
    said = "".join(said)
    assert process.returncode == 0, said[-3000:]
    assert f"The class hub is at {config.url}" in said and "The class hub stopped" in said
    assert not _processes(), _processes()
    assert setup.load(config.path).students  # the config it was given is still there
