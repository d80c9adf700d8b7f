"""Setting up the class hub (`course hub`, `make class`), as root, from one config file
(`hub.toml`): the accounts and passwords of an instructor and the students, the ports,
the hub's folder and nbgrader's exchange. `setup` makes what is missing:

- a local account per person (home 0700: nobody reads another's files);
- nbgrader's exchange, a folder everyone may write (sticky: nobody removes another's);
- the instructor's course folder (nbgrader's layout: the sources, the generated release
  and the gradebook), and per person a `~/.jupyter`: nbgrader's config (course id,
  exchange, for the instructor the course folder) and, for students, the instructor's
  extensions (formgrader, create assignment, course list) switched off;
- configurable-http-proxy from npm in `.venv/node`, and the hub's own config.

Running it is autograder.hub.server's.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder import course
from autograder.errors import CourseError

PROXY_PACKAGE = "configurable-http-proxy@5.3.0"
# JupyterLab's extensions that are the instructor's; students get none of them
INSTRUCTOR_ONLY_LAB = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                       "@jupyter/nbgrader:course-list")
INSTRUCTOR_ONLY_SERVER = ("nbgrader.server_extensions.formgrader",
                          "nbgrader.server_extensions.course_list")
# JupyterLab's user settings for everyone: no "get notified about Jupyter news?" pop-up
LAB_SETTINGS = {"@jupyterlab/apputils-extension/notification": {"fetchNews": "false"}}


@dataclass
class HubConfig:
    path: Path
    ip: str
    port: int
    hub_port: int
    proxy_api_port: int
    folder: Path
    exchange: Path
    instructor: str
    instructor_password: str
    course_name: str
    students: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{self.port}"

    @property
    def passwords(self) -> dict[str, str]:
        return {self.instructor: self.instructor_password, **self.students}

    @property
    def course_dir(self) -> Path:
        return home(self.instructor) / self.course_name


def load(path: Path | str) -> HubConfig:
    """The hub's config file, checked: a CourseError names the first thing wrong in it."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError(f"No hub config at {path}: copy the course's hub.toml and edit "
                          "it.") from None
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path} is not valid TOML: {error}.") from None

    def need(table: str, key: str, kind):
        value = data.get(table, {}).get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CourseError(f"{path}: [{table}] {key} is missing or not a "
                              f"{kind.__name__}.")
        return value

    students = data.get("students")
    if not isinstance(students, dict) or not students:
        raise CourseError(f"{path}: [students] must list at least one account = password.")
    config = HubConfig(
        path=path, ip=need("hub", "ip", str), port=need("hub", "port", int),
        hub_port=need("hub", "hub_port", int),
        proxy_api_port=need("hub", "proxy_api_port", int),
        folder=Path(need("hub", "folder", str)), exchange=Path(need("hub", "exchange", str)),
        instructor=need("instructor", "name", str),
        instructor_password=need("instructor", "password", str),
        course_name=need("instructor", "course", str),
        students={str(k): v for k, v in students.items()})
    for name, password in config.passwords.items():
        if not _valid_account(name):
            raise CourseError(f"{path}: {name!r} cannot be an account name (lower-case "
                              "letters, digits, - and _, starting with a letter).")
        if not isinstance(password, str) or len(password) < 8:
            raise CourseError(f"{path}: the password of {name} must be a string of at least "
                              "8 characters.")
    if config.instructor in config.students:
        raise CourseError(f"{path}: {config.instructor} is the instructor and a student.")
    ports = [config.port, config.hub_port, config.proxy_api_port]
    if len(set(ports)) != 3 or not all(0 < p < 65536 for p in ports):
        raise CourseError(f"{path}: port, hub_port and proxy_api_port must be three "
                          "different ports.")
    if not config.folder.is_absolute() or not config.exchange.is_absolute():
        raise CourseError(f"{path}: folder and exchange must be absolute paths.")
    if config.exchange.is_relative_to(config.folder):
        raise CourseError(f"{path}: the exchange cannot be inside the hub's folder, which "
                          "only root may enter.")
    if "/" in config.course_name or config.course_name in ("", ".", ".."):
        raise CourseError(f"{path}: [instructor] course is a folder name in the instructor's "
                          "home, not a path.")
    return config


def _valid_account(name: str) -> bool:
    return (0 < len(name) <= 32 and name[0].isascii() and name[0].islower()
            and all(ch.isascii() and (ch.islower() or ch.isdigit() or ch in "-_")
                    for ch in name))


def home(user: str) -> Path:
    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return Path("/home") / user


# ---------------------------------------------------------------------------------------
# Setting up (as root)
# ---------------------------------------------------------------------------------------

def setup(config: HubConfig, root: Path, log=print) -> None:
    """Make what the hub needs and is missing; what exists is kept (students' work)."""
    if os.geteuid() != 0:
        raise CourseError("The class hub creates accounts and starts each person's "
                          "JupyterLab as that person: run it as root (sudo make class).")
    _check_readable(root)
    if config.path.stat().st_mode & 0o077:  # it holds everyone's password
        config.path.chmod(0o600)
        log(f"{config.path} holds the passwords: now readable by root only")
    # nbgrader's gradebook calls `alembic` by name: this Python's scripts come first.
    os.environ["PATH"] = course.tool_env()["PATH"]
    for name in config.passwords:
        _account(name, log)
    config.folder.mkdir(parents=True, exist_ok=True)
    config.folder.chmod(0o700)
    config.exchange.mkdir(parents=True, exist_ok=True)
    config.exchange.chmod(0o1777)
    _course_folder(config, root, log)
    _jupyter_config(config, root, config.instructor, instructor=True)
    for name in config.students:
        _jupyter_config(config, root, name, instructor=False)
    (config.folder / "jupyterhub_config.py").write_text(hub_config(config, root))


def closed_folders(root: Path) -> list[Path]:
    """Folders on the way to the course or its Python (the interpreter the venv links to,
    its standard library) that other accounts cannot enter."""
    targets = [root, Path(sys.executable).resolve().parent, Path(sys.base_prefix).resolve()]
    folders = {folder for target in targets for folder in (target, *target.parents)}
    return sorted(f for f in folders if not os.stat(f).st_mode & 0o001)


def _check_readable(root: Path) -> None:
    """Every person's JupyterLab runs the course's Python as that person."""
    closed = closed_folders(root)
    if closed:
        folders = " ".join(str(f) for f in closed)
        raise CourseError(f"Other accounts cannot enter {folders}, on the way to the course or "
                          f"its Python: allow them in (chmod o+x {folders}), or set the course "
                          "up with a Python installed where all can read it (PYTHON=/usr/bin/"
                          "python3.11 make install).")


def _account(name: str, log) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        made = subprocess.run(["useradd", "--create-home", "--user-group", "--shell",
                               "/bin/bash", name], capture_output=True, text=True)
        if made.returncode != 0:
            raise CourseError(f"useradd could not create the account {name}: "
                              f"{made.stderr.strip() or made.returncode}.") from None
        log(f"created the account {name}")
    home(name).mkdir(parents=True, exist_ok=True)
    _own(home(name), name)
    home(name).chmod(0o700)


def _own(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _own_tree(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for folder, dirs, files in os.walk(path):
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), entry.pw_uid, entry.pw_gid,
                     follow_symlinks=False)


def _course_folder(config: HubConfig, root: Path, log) -> None:
    from autograder.grading.store import prepare_out

    target = config.course_dir
    prepare_out(root, target, course.assignments(root), log=log)
    _own_tree(target, config.instructor)


def _jupyter_config(config: HubConfig, root: Path, user: str, instructor: bool) -> None:
    folder = home(user) / ".jupyter"
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    lines = ["c = get_config()  # noqa: F821  (written by course hub from hub.toml)"]
    if instructor:
        # the course folder's config loads the course's: should the formgrader's Autograde
        # button be pressed, it grades with the course's engine, as `course-grade class`
        lines.append(f"load_subconfig({str(config.course_dir / course.CONFIG_NAME)!r})"
                     "  # noqa: F821")
    else:
        lines.append(f"c.CourseDirectory.course_id = {course_id(root)!r}")
    lines.append(f"c.Exchange.root = {str(config.exchange)!r}")
    (folder / "nbgrader_config.py").write_text("\n".join(lines) + "\n")
    if not instructor:
        server = {"ServerApp": {"jpserver_extensions": {
            name: False for name in INSTRUCTOR_ONLY_SERVER}}}
        (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1))
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {name: True for name in INSTRUCTOR_ONLY_LAB}}, indent=1))
    for name, values in LAB_SETTINGS.items():
        path = folder / "lab" / "user-settings" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    _own_tree(folder, user)
    _profile(user)


PROFILE_MARK = "# course hub: the course's commands (course, course-grade, nbgrader) first"


def _profile(user: str) -> None:
    """A terminal in JupyterLab is a login shell, whose PATH comes from /etc/profile: the
    person's ~/.profile puts the course's commands first."""
    path = home(user) / ".profile"
    text = path.read_text() if path.exists() else ""
    if PROFILE_MARK not in text:
        bin_dir = Path(sys.executable).parent
        path.write_text(text + f'\n{PROFILE_MARK}\nexport PATH="{bin_dir}:$PATH"\n')
    _own(path, user)


def course_id(root: Path) -> str:
    """The nbgrader course id set in the course's nbgrader_config.py."""
    for line in (root / course.CONFIG_NAME).read_text().splitlines():
        if line.startswith("c.CourseDirectory.course_id"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise CourseError(f"{root / course.CONFIG_NAME} sets no CourseDirectory.course_id.")


def proxy_command(root: Path, log=print) -> Path:
    """configurable-http-proxy, installed from npm into the course's venv when missing."""
    prefix = Path(sys.executable).parent.parent / "node"
    command = prefix / "node_modules" / ".bin" / "configurable-http-proxy"
    if command.exists():
        return command
    npm = shutil.which("npm")
    if npm is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run([str(root / "scripts" / "system-packages.sh"), "npm:npm",
                        "node:nodejs"], check=False)
        npm = shutil.which("npm")
    if npm is None:
        raise CourseError("JupyterHub's proxy needs Node.js and npm: install them "
                          "(Debian/Ubuntu: sudo apt-get install nodejs npm).")
    log(f"installing {PROXY_PACKAGE} from npm into {prefix} ...")
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                           PROXY_PACKAGE], capture_output=True, text=True)
    if done.returncode != 0 or not command.exists():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-5:])
        raise CourseError(f"npm could not install {PROXY_PACKAGE}:\n{tail}")
    return command


def hub_config(config: HubConfig, root: Path) -> str:
    """The jupyterhub_config.py of the class hub: all of it from `config`."""
    bin_dir = Path(sys.executable).parent
    settings = {
        "JupyterHub.ip": config.ip,
        "JupyterHub.port": config.port,
        "JupyterHub.hub_ip": "127.0.0.1",
        "JupyterHub.hub_port": config.hub_port,
        "JupyterHub.db_url": f"sqlite:///{config.folder / 'jupyterhub.sqlite'}",
        "JupyterHub.cookie_secret_file": str(config.folder / "jupyterhub_cookie_secret"),
        "JupyterHub.authenticator_class": "autograder.hub.server.CourseAuthenticator",
        "JupyterHub.cleanup_servers": True,
        "CourseAuthenticator.config_file": str(config.path),
        "Authenticator.allowed_users": sorted(config.passwords),
        "Authenticator.admin_users": [config.instructor],
        "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{config.proxy_api_port}",
        "ConfigurableHTTPProxy.command": [str(proxy_command(root))],
        "ConfigurableHTTPProxy.pid_file": str(config.folder / "proxy.pid"),
        "Spawner.cmd": [str(bin_dir / "jupyterhub-singleuser")],
        "Spawner.default_url": "/lab",
        "Spawner.environment": {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "TF_CPP_MIN_LOG_LEVEL": "3"},
        "Spawner.http_timeout": 120,
        "Spawner.start_timeout": 120,
    }
    lines = ["# Written by `course hub` from " + str(config.path) + "; edit that file instead.",
             "c = get_config()  # noqa: F821"]
    lines += [f"c.{key} = {value!r}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"
