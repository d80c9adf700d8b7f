"""Helpers the tests share: a free port, and JupyterLab in headless chromium for
tests/course/test_browser.py and tests/hub/test_hub.py (the server, the page, the steps).

The command of `make lab` is started on a free localhost port with a fresh token, a throw-away HOME
and Jupyter folders, and a copy of the release notebooks as its root, so a run writes
nothing into the checkout. The page is driven with Playwright through Debian's
`chromium` (Playwright's own browser download does not work on the course machines).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from autograder.cells import (
    grade_id,
    nbgrader_meta,
    read_notebook,
    strip_solution_markers,
    write_notebook,
)
from conftest import ROOT

SKIP_ENV = "COURSE_SKIP_BROWSER"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
# A run of cells in the page may take this long (a whole notebook takes under a minute).
CELL_TIMEOUT_S = 300



def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

def find_chromium() -> str | None:
    """Debian's chromium: $CHROMIUM, else the first of CHROMIUM_CANDIDATES on PATH."""
    wanted = os.environ.get("CHROMIUM")
    if wanted:
        return wanted if Path(wanted).exists() else None
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


# JupyterLab user settings of the throw-away profile. Every cell stays in the page
# (JupyterLab 4 renders only the visible cells by default), so that the test can click
# any of them; the "get notified about Jupyter news?" toast stays out of the screenshots.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


def write_lab_settings(config_dir: Path) -> None:
    for name, values in LAB_SETTINGS.items():
        path = config_dir / "lab" / "user-settings" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@dataclass
class Lab:
    """A running JupyterLab serving `root`, reachable at `base` with `token`."""

    process: subprocess.Popen
    base: str
    token: str
    root: Path
    log_path: Path

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def request(self, path: str, method: str = "GET") -> object:
        request = urllib.request.Request(self.url(path), method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every notebook's session and kernel (each test opens its own)."""
        for session in self.request("api/sessions"):
            self.request(f"api/sessions/{session['id']}", method="DELETE")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_lab(work: Path, notebooks: list[Path]) -> Lab:
    """Copy `notebooks` (each in its NN-name folder) under `work` and serve them."""
    root = work / "course"
    for path in notebooks:
        target = root / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    home = work / "home"
    dirs = {"HOME": home, "JUPYTER_CONFIG_DIR": home / ".jupyter",
            "JUPYTER_DATA_DIR": home / "data", "JUPYTER_RUNTIME_DIR": home / "runtime",
            "XDG_CACHE_HOME": home / ".cache", "MPLCONFIGDIR": home / "mpl"}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    bin_dir = ROOT / ".venv" / "bin"
    write_lab_settings(dirs["JUPYTER_CONFIG_DIR"])
    # COURSE_QUICK: notebooks that train (05) train briefly in the page, as when graded.
    env = {**os.environ, **{k: str(v) for k, v in dirs.items()}, "TF_CPP_MIN_LOG_LEVEL": "3",
           "COURSE_QUICK": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    port, token = free_port(), secrets.token_hex(16)
    # What `make lab` runs, with the copy as root instead of notebooks/ (jupyter refuses
    # two root dirs), from the checkout so nbgrader's Validate reads nbgrader_config.py.
    command = [str(bin_dir / "jupyter"), "lab", f"--ServerApp.root_dir={root}",
               "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log_path = work / "lab.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)
    lab = Lab(process, f"http://127.0.0.1:{port}", token, root, log_path)
    deadline = time.monotonic() + 120
    while True:
        try:
            lab.request("api/contents")
            return lab
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_lab(lab)
                raise RuntimeError("JupyterLab did not start:\n" + lab.log()) from None
            time.sleep(0.5)


def stop_lab(lab: Lab) -> None:
    """End the server, its kernels and everything it started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(lab.process.pid, sig)
        except ProcessLookupError:
            return
        try:
            lab.process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def filled_notebook(release: Path, solution: Path, target: Path) -> list[str]:
    """Write the release with each answer cell holding the solution's source (markers
    removed), as a student who got everything right would have it; return the ids."""
    solved = {grade_id(c): c.source for c in read_notebook(solution).cells
              if nbgrader_meta(c).get("solution", False)}
    nb = read_notebook(release)
    filled = []
    for cell in nb.cells:
        if nbgrader_meta(cell).get("solution", False):
            cell.source = strip_solution_markers(solved[grade_id(cell)])
            filled.append(grade_id(cell))
    write_notebook(nb, target)
    return filled


class NotebookPage:
    """One notebook open in JupyterLab, driven as a student would, with screenshots."""

    def __init__(self, page, lab: Lab, path: str, shots: Path):
        self.page, self.lab, self.path, self.shots = page, lab, path, shots
        self.step = 0
        shots.mkdir(parents=True, exist_ok=True)

    # --- what is on the page
    @property
    def cells(self):
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def cell(self, index: int):
        return self.cells.nth(index)

    def prompts(self) -> list[str]:
        return self.cells.evaluate_all(
            "cells => cells.map(c => (c.querySelector('.jp-InputPrompt') || {}).textContent"
            " || '')")

    def status(self) -> str | None:
        return self.page.get_attribute(".jp-Notebook-ExecutionIndicator", "data-status")

    def shot(self, name: str, cell: int | None = None) -> Path:
        """Screenshot the page as it is now (with `cell` scrolled into view first)."""
        if cell is not None:
            self.cell(cell).scroll_into_view_if_needed()
            self.page.wait_for_timeout(300)
        self.step += 1
        path = self.shots / f"{self.step:02d}-{slug(name)}.png"
        self.page.screenshot(path=str(path))
        return path

    # --- actions
    def open(self) -> None:
        # ?reset: a fresh workspace, without the notebooks an earlier test had open
        self.page.goto(self.lab.url(f"lab/tree/{self.path}?reset"))
        self.page.wait_for_selector(
            ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=120_000)
        self.wait_for_kernel()

    def wait_for_kernel(self) -> None:
        """Until the kernel has started and is idle (the status bar says so)."""
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status=idle]",
                                    timeout=120_000)
        self.page.wait_for_function(
            "() => /\\| Idle/.test(document.querySelector('#jp-main-statusbar')?.textContent)",
            timeout=120_000)

    def command_mode(self) -> None:
        self.page.keyboard.press("Escape")

    def menu(self, title: str, command: str) -> None:
        self.page.click(f".lm-MenuBar-itemLabel:text-is('{title}')")
        self.page.click(f".lm-Menu-item[data-command='{command}']")

    def toolbar(self, command: str) -> None:
        self.page.click(f".jp-NotebookPanel-toolbar jp-button[data-command='{command}']")

    def accept_dialog(self) -> str:
        dialog = self.page.wait_for_selector(".jp-Dialog", timeout=30_000)
        text = dialog.inner_text()
        self.page.click(".jp-Dialog .jp-mod-accept")
        self.page.wait_for_selector(".jp-Dialog", state="detached")
        return text

    def wait_until_ran(self, first: int, timeout_s: float = CELL_TIMEOUT_S) -> None:
        """Wait until cell `first` got an execution count and the kernel is idle with
        nothing queued (seen twice in a row), instead of sleeping a fixed time."""
        deadline = time.monotonic() + timeout_s
        settled = 0
        while settled < 2:
            prompts = self.prompts()
            done = re.fullmatch(r"\[\d+\]:", prompts[first].strip()) is not None
            busy = any("*" in p for p in prompts)
            settled = settled + 1 if done and not busy and self.status() == "idle" else 0
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path}: cells still running after {timeout_s} s: "
                                   f"{prompts}")
            self.page.wait_for_timeout(250)

    def unexecuted(self, code: list[int]) -> list[int]:
        """The code cells (indices `code`) whose prompt says they have not run."""
        prompts = self.prompts()
        return [i for i in code if prompts[i].strip() == "[ ]:"]

    def run_all(self, code: list[int], restart: bool) -> int:
        """Run every code cell (indices `code`) once, as a student would: Run > Run All
        Cells on a fresh kernel, or the toolbar's Restart Kernel and Run All Cells. Where a
        cell raised and JupyterLab stopped, go on from the next cell that did not run
        (Run > Run Selected Cell and All Below; on the last cell, Run Selected Cell).
        Returns how many times it went on."""
        if restart:
            self.toolbar("notebook:restart-run-all")
            assert "Restart" in self.accept_dialog()
        else:
            self.menu("Run", "runmenu:run-all")
        self.wait_until_ran(code[0])
        resumed = 0
        while todo := self.unexecuted(code):
            self.select(todo[0])
            last = todo[0] == self.cells.count() - 1  # Run All Below is off on the last
            self.menu("Run", "notebook:run-cell" if last else "notebook:run-all-below")
            self.wait_until_ran(todo[0])
            resumed += 1
        return resumed

    def save(self) -> None:
        self.command_mode()
        self.page.keyboard.press("Control+s")
        self.page.wait_for_selector(".lm-TabBar-tab.jp-mod-current:not(.jp-mod-dirty)")
        self.page.wait_for_timeout(300)

    def reload_from_disk(self) -> None:
        self.menu("File", "docmanager:reload")
        if self.page.locator(".jp-Dialog").count():
            self.accept_dialog()
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status=idle]")
        self.page.wait_for_timeout(500)

    def validate(self, timeout_s: float = 600) -> tuple[str, str]:
        """Press nbgrader's Validate button; return (the result's kind, the dialog's text)
        and leave the dialog open for a screenshot. The kind is the class nbgrader puts on
        its message (validation-success, -failed, -changed, -type-changed) or, when the
        button itself failed, the dialog's title."""
        self.page.click(".jp-NotebookPanel-toolbar .validate-button")
        dialog = self.page.wait_for_selector(".jp-Dialog", timeout=timeout_s * 1000)
        text = dialog.inner_text()
        kinds = self.page.eval_on_selector_all(
            ".jp-Dialog #validation-message", "els => els.map(e => e.className)")
        kind = kinds[0] if kinds else text.strip().splitlines()[0]
        return kind, text

    def close_dialog(self) -> None:
        self.page.click(".jp-Dialog .jp-mod-accept")
        self.page.wait_for_selector(".jp-Dialog", state="detached")

    # --- a cell's editor and its metadata
    def editor_text(self, index: int) -> str:
        return self.cell(index).locator(".cm-content").inner_text()

    def type_into(self, index: int, text: str, replace: bool = False) -> None:
        """Click into cell `index`'s editor and type, as a student would."""
        self.cell(index).scroll_into_view_if_needed()
        self.cell(index).locator(".cm-content").click()
        if replace:
            self.page.keyboard.press("Control+a")
        self.page.keyboard.type(text)
        self.command_mode()

    def select(self, index: int) -> None:
        self.cell(index).scroll_into_view_if_needed()
        self.cell(index).locator(".jp-InputPrompt").click()

    def set_editable_in_property_inspector(self, index: int) -> None:
        """Select cell `index`, open the right sidebar's Property Inspector, and under
        Common Tools switch the cell from Read-Only to Editable."""
        self.select(index)
        self.page.click(".jp-SideBar.jp-mod-right [data-id='jp-property-inspector']")
        common = self.page.locator("#jp-property-inspector .jp-Collapse-header",
                                   has_text="Common Tools")
        if "jp-Collapse-header-collapsed" in (common.get_attribute("class") or ""):
            common.click()
        field = "#jp-property-inspector select[id$='tools_/editable']"
        self.page.select_option(field, label="Editable")
