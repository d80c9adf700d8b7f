"""`make lab` serves JupyterLab on localhost with the course's notebooks listed."""

import json
import os
import secrets
import signal
import subprocess
import time
import urllib.request

import pytest
from support import free_port

from conftest import ROOT, release_paths


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def stop(process: subprocess.Popen) -> None:
    """End the server and everything make started, leaving no process behind."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.mark.slow
def test_make_lab_serves_the_notebooks(tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    args = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
            f"--IdentityProvider.token={token}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115
    server = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"],
                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, body = get(f"{base}/api/contents?token={token}")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
                time.sleep(0.5)
        listed = {item["name"] for item in json.loads(body)["content"]}
        assert {p.parent.name for p in release_paths()} <= listed
        folder = release_paths()[0].parent.name
        _, body = get(f"{base}/api/contents/{folder}?token={token}")
        assert release_paths()[0].name in {i["name"] for i in json.loads(body)["content"]}
        status, page = get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in page
        # students get nbgrader's Validate button: its lab extension is served
        _, body = get(f"{base}/lab/api/extensions?token={token}")
        assert "jupyter-nbgrader" in {e["name"] for e in json.loads(body)}
        # and no "get notified about Jupyter news?" pop-up: fetchNews is off by default
        _, body = get(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification"
                      f"?token={token}")
        assert json.loads(body)["schema"]["properties"]["fetchNews"]["default"] == "false"
        with pytest.raises(urllib.error.HTTPError):  # and nothing without the token
            get(f"{base}/api/contents")
    finally:
        stop(server)
        log.close()
    assert "All set" in (tmp_path / "lab.log").read_text()
