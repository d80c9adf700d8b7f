"""The course's JupyterHub for a class, on this machine (`course hub`, `make class`).

`Hub` runs JupyterHub, set up by autograder.hub.setup from `hub.toml` (each person's
JupyterLab 4 started as that account), and stops it with everything it started, servers
included; `CourseAuthenticator` logs people in with the config file's passwords.
"""

from __future__ import annotations

import hmac
import pwd
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from autograder import course, processes
from autograder.errors import CourseError
from autograder.hub.setup import HubConfig, load, setup

START_SECONDS = 60  # for the hub to answer

# ---------------------------------------------------------------------------------------
# Logging in: the passwords of the config file
# ---------------------------------------------------------------------------------------

try:
    from jupyterhub.auth import Authenticator
    from traitlets import Unicode

    class CourseAuthenticator(Authenticator):
        """The accounts and passwords of the hub's config file (a try on one machine; a
        real server uses the institution's login instead)."""

        config_file = Unicode(help="the course's hub.toml").tag(config=True)

        async def authenticate(self, handler, data):
            passwords = load(self.config_file).passwords
            name = (data or {}).get("username", "")
            given = (data or {}).get("password", "")
            known = passwords.get(name)
            if known is not None and hmac.compare_digest(known.encode(), given.encode()):
                return name
            return None
except ImportError:  # jupyterhub not installed: `course hub` says so when run
    CourseAuthenticator = None


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------

class Hub:
    """JupyterHub for `config`, started in the background; `stop()` ends it and whatever
    it started (proxy, each person's server and kernels)."""

    def __init__(self, config: HubConfig, root: Path, log=print):
        self.config, self.log = config, log
        jupyterhub = Path(sys.executable).parent / "jupyterhub"
        if not jupyterhub.exists():
            raise CourseError("JupyterHub is not installed in the course's venv: run "
                              "`make install` (it is in pyproject.toml).")
        self.log_path = config.folder / "jupyterhub.log"
        output = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [str(jupyterhub), "-f", str(config.folder / "jupyterhub_config.py")],
            cwd=config.folder, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True, env=course.tool_env())
        output.close()
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise

    def _wait(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = "\n".join(self.log_path.read_text().splitlines()[-15:])
                raise CourseError(f"JupyterHub stopped at start (log {self.log_path}):\n"
                                  f"{tail}")
            try:
                with urllib.request.urlopen(f"{self.config.url}/hub/api/", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise CourseError(f"JupyterHub did not answer at {self.config.url} within "
                          f"{START_SECONDS} s: see {self.log_path}")

    def stop(self) -> None:
        # the hub's process group: SIGTERM lets the hub stop the servers it spawned
        processes.end(processes.group(self.process.pid), grace=30)
        self.process.wait()
        _end_processes_of(self.config.passwords)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _end_processes_of(users) -> None:
    """Anything still running as one of the class's accounts (servers, kernels)."""
    import psutil

    uids = set()
    for name in users:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    processes.end([p for p in psutil.process_iter(["uids"]) if p.info["uids"] and
                   p.info["uids"].real in uids], grace=10)


def serve(config_path: Path | str, root: Path, log=print) -> int:
    """`course hub`: set up, run until Ctrl-C (or SIGTERM), stop everything."""
    config = load(config_path)
    setup(config, root, log)
    stop = []
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    # Ctrl-C stops it even where it was started with SIGINT ignored (a background job of a
    # script, a parent that ignores it): Python then leaves it ignored
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with Hub(config, root, log) as hub:
            log(f"The class hub is at {config.url}: log in as {config.instructor} or a "
                f"student of {config.path}. Ctrl-C stops it.")
            while not stop and hub.process.poll() is None:
                time.sleep(0.5)
            if hub.process.poll() is not None:
                raise CourseError(f"JupyterHub stopped: see {hub.log_path}")
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    log("The class hub stopped; the accounts, the course folder and the exchange are kept.")
    return 0

