"""Who may join the grading cluster (autograder.scale.certs): a scheduler and worker started
as the README says admit only holders of the course's certificates, the grader refuses a
scheduler that would admit anyone, and `course-grade cluster-certs` makes the files."""

from __future__ import annotations

import os
import re
import shlex
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder import processes
from autograder.cli import grade_main
from autograder.errors import CourseError
from autograder.scale import certs
from autograder.scale.dask_cluster import Cluster
from autograder.scale.dask_local import LocalProcesses
from conftest import ROOT

DASK = Path(sys.executable).parent / "dask"
KEYS = ("ca.key", "scheduler.key", "worker.key", "client.key")


# --- the files ---------------------------------------------------------------------------

@pytest.mark.parametrize("way", ["cryptography", "openssl"])
def test_cluster_certs_makes_a_ca_and_a_certificate_per_role(tmp_path, capsys, monkeypatch,
                                                             way):
    from cryptography import x509

    if way == "openssl":
        if not certs.shutil.which("openssl"):
            pytest.skip("no openssl command here")
        monkeypatch.setattr(certs, "_has_cryptography", lambda: False)
    folder = tmp_path / "certs"
    assert grade_main(["cluster-certs", "--out", str(folder)]) == 0
    said = capsys.readouterr().out
    assert "ca.key signed them and goes nowhere" in said
    assert "worker: ca.crt, worker.crt, worker.key" in said
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{name}.{ext}" for name in ("ca", *certs.ROLES) for ext in ("crt", "key"))
    assert folder.stat().st_mode & 0o777 == 0o700
    for key in KEYS:
        assert (folder / key).stat().st_mode & 0o777 == 0o600, key
    ca = x509.load_pem_x509_certificate((folder / "ca.crt").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in certs.ROLES:
        cert = x509.load_pem_x509_certificate((folder / f"{role}.crt").read_bytes())
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        # each key is its certificate's: ssl loads the pair
        ssl.create_default_context().load_cert_chain(folder / f"{role}.crt",
                                                     folder / f"{role}.key")
    assert "ca.key" not in {n for names in certs.WHO_KEEPS.values() for n in names}
    # a second run does not overwrite them
    assert grade_main(["cluster-certs", "--out", str(folder)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {folder} exists already: the cluster's certificates are "
                            "made once") and error.count("\n") == 1


# --- a scheduler and a worker started as the README says ---------------------------------

def readme_command(program: str) -> str:
    """The README's `dask scheduler` or `dask worker` command, its lines joined."""
    section = (ROOT / "README.md").read_text().split("### Grading on a cluster (Dask)")[1]
    block = section.split("```bash")[1].split("```")[0].replace("\\\n", " ")
    line = next(line for line in block.splitlines() if f"bin/dask {program} " in line)
    return line.split("#")[0].strip()


# the dask command as a shell reads it (a checkout path may hold spaces)
DASK_CMD = shlex.quote(str(DASK))


def start(command: str, log: Path, env: dict) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(["bash", "-c", command], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env})


def end(started: list[subprocess.Popen]) -> None:
    processes.end([member for p in started for member in processes.group(p.pid)], grace=10)
    for p in started:
        p.wait()


def tls_without_certificate():
    """A `distributed.Security` that speaks TLS, trusts any scheduler and brings no
    certificate: what someone who found the port but holds no key can do."""
    from distributed.security import Security

    class Anonymous(Security):
        __slots__ = ()

        def get_connection_args(self, role):
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            return {"ssl_context": context, "require_encryption": True, "extra_conn_args": {}}

    return Anonymous()


def refused(address: str, **kwargs) -> str:
    """Why a plain `distributed.Client` could not join."""
    from distributed import Client

    with pytest.raises(Exception) as error:  # noqa: PT011 - Dask's own kinds vary
        with Client(address, timeout=5, set_as_default=False, **kwargs):
            pass
    return f"{type(error.value).__name__}: {error.value}"


@pytest.mark.slow
def test_a_cluster_started_as_the_readme_says_admits_only_the_course_certificates(tmp_path):
    from distributed import Client
    from distributed.security import Security

    mine, theirs = tmp_path / "certs", tmp_path / "theirs"  # theirs: a CA of a student's own
    certs.make(mine)
    certs.make(theirs)
    scheduler = readme_command("scheduler").replace(".venv/bin/dask", DASK_CMD)
    assert "--tls-ca-file $C/ca.crt" in scheduler and "127.0.0.1:8787" in scheduler
    info = tmp_path / "scheduler.json"
    started = [start(f"{scheduler} --host tls://127.0.0.1 --port 0 --dashboard-address "
                     f"127.0.0.1:0 --scheduler-file {info}", tmp_path / "scheduler.log",
                     {"C": str(mine)})]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline and started[0].poll() is None:
            time.sleep(0.2)
        address = re.search(r'"address": "([^"]+)"', info.read_text()).group(1)
        assert address.startswith("tls://127.0.0.1:")
        port = address.rsplit(":", 1)[1]
        worker = readme_command("worker").replace(".venv/bin/dask", DASK_CMD).replace(
            "tls://HOST:8786", address)
        started.append(start(f"{worker} --nworkers 1 --name readme --local-directory "
                             f"{tmp_path / 'w'}", tmp_path / "readme.log", {"C": str(mine)}))
        # workers without the course's certificate: none, a student's own, no TLS at all
        plain = ["--nthreads", "1", "--no-nanny", "--no-dashboard"]
        env = {"DASK_CONFIG": str(tmp_path / "none")}  # Dask's defaults, as a student has
        for name, target, extra in [
                ("none", address, []), ("tcp", f"tcp://127.0.0.1:{port}", []),
                ("theirs", address, certs.flags(theirs, "worker")[2:]
                 + ["--tls-ca-file", str(mine / "ca.crt")])]:
            started.append(start(" ".join([DASK_CMD, "worker", target, *plain, *extra,
                                           "--name", name]), tmp_path / f"{name}.log", env))

        # clients: none gets in, whatever it tries
        reasons = {
            "tcp": refused(f"tcp://127.0.0.1:{port}"),
            "tls, no certificate": refused(address),
            "tls, no certificate, any scheduler": refused(
                address, security=tls_without_certificate()),
            "a certificate of another CA": refused(address, security=Security(
                require_encryption=True, tls_ca_file=str(mine / "ca.crt"),
                tls_client_cert=str(theirs / "client.crt"),
                tls_client_key=str(theirs / "client.key"))),
        }
        for way, reason in reasons.items():
            if way == "a certificate of another CA":  # under TLS 1.3 the client's handshake
                # ends before the scheduler refuses its certificate, and Dask's client then
                # fails in ways that vary with timing (a closed stream, bare asserts): the
                # scheduler's log below says why it was refused
                continue
            assert re.search(r"SSL|TLS|ssl_context|reset|closed", reason), (way, reason)
        # the grader's own check: the scheduler asks for a certificate
        certs._check_asks(address, str(mine / "ca.crt"), 5)

        with Client(address, security=certs.client_security(mine), timeout=30,
                    set_as_default=False) as client:
            client.wait_for_workers(1, timeout=60)
            deadline = time.monotonic() + 30  # until each intruder has tried (or given up)
            logs = {name: tmp_path / f"{name}.log" for name in ("none", "tcp", "theirs")}
            while time.monotonic() < deadline and not (
                    started[2].poll() is not None
                    and "Waiting to connect" in logs["tcp"].read_text()
                    and "Waiting to connect" in logs["theirs"].read_text()):
                time.sleep(0.5)
            assert started[2].poll() is not None, "a worker without a certificate still runs"
            time.sleep(2)  # more tries
            names = sorted(w["name"] for w in client.scheduler_info(n_workers=-1)[
                "workers"].values())
            assert names == ["readme-0"] or names == ["readme"], names
            assert client.submit(lambda: 42, pure=False).result(timeout=30) == 42
    finally:
        end(started)
    log = (tmp_path / "scheduler.log").read_text()  # refused by the scheduler itself:
    assert "peer did not return a certificate" in log  # no certificate,
    assert "wrong version number" in log  # no TLS at all,
    assert re.search(r"handshake failed .*(unknown ca|certificate verify failed)", log,
                     re.IGNORECASE), log[-3000:]  # a certificate of another CA
    assert "encryption required" not in log


# --- the grader refuses a scheduler that would admit anyone ------------------------------

class TLSServer:
    """A TLS server holding `cert` that asks for no client certificate, such as a Dask
    scheduler behind a TLS proxy: it greets each connection, as Dask's handshake does."""

    def __init__(self, cert: Path, key: Path):
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.context.verify_mode = ssl.CERT_NONE
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tls://127.0.0.1:{self.sock.getsockname()[1]}"
        self.kept: list = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
                self.kept.append(self.context.wrap_socket(conn, server_side=True))
                self.kept[-1].sendall(b"\x00" * 8)
            except OSError:
                return

    def close(self):
        self.sock.close()
        for conn in self.kept:
            conn.close()


def grade_on(address: str, tmp_path: Path, capsys, *options: str) -> tuple[int, str]:
    submitted = tmp_path / "submitted" / "ada" / "01-autodiff"
    submitted.mkdir(parents=True, exist_ok=True)
    notebook = ROOT / "notebooks" / "01-autodiff" / "autodiff.ipynb"
    (submitted / notebook.name).write_bytes(notebook.read_bytes())
    code = grade_main(["class", str(tmp_path / "submitted"), "--out", str(tmp_path / "out"),
                       "--scheduler", address, *options])
    assert not (tmp_path / "out").exists(), "a refused run wrote into the class folder"
    return code, capsys.readouterr().err


def test_the_grader_refuses_a_cluster_that_admits_anyone(tmp_path, capsys):
    mine, theirs = tmp_path / "certs", tmp_path / "theirs"
    certs.make(mine)
    certs.make(theirs)
    with_certs = ("--cluster-certs", str(mine))
    # a plain scheduler, as the README started one before: refused, with what to do
    with LocalProcesses(0, tmp_path / "cluster", secure=False) as cluster:
        assert cluster.address.startswith("tcp://")
        code, error = grade_on(cluster.address, tmp_path, capsys, *with_certs)
        assert code == 2 and error.count("\n") == 1, error
        assert error == (
            f"error: Not grading on {cluster.address}: a tcp:// scheduler admits anyone who "
            "reaches it; start it with the course's certificates (`course-grade "
            "cluster-certs`, then `dask scheduler --tls-ca-file ... --tls-cert ... --tls-key "
            "...` as the README says) and pass its tls:// address, or pass --insecure-cluster"
            " to grade on it anyway.\n")
        # unless told: then it connects (and finds no worker there)
        said = []
        with pytest.raises(CourseError, match="has no worker"):
            Cluster(cluster.address, ROOT, ["01-autodiff"], sandboxed=False, timeout=1,
                    insecure=True, log=said.append)
        assert any("--insecure-cluster" in line for line in said), said

    # a TLS scheduler that asks for no certificate
    server = TLSServer(mine / "scheduler.crt", mine / "scheduler.key")
    try:
        code, error = grade_on(server.address, tmp_path, capsys, *with_certs)
        assert code == 2 and error == (
            f"error: Not grading on {server.address}: that scheduler admits a connection "
            "without a certificate; start it with --tls-ca-file (the course's ca.crt) so "
            "that it asks for one, or pass --insecure-cluster to grade on it anyway.\n")
    finally:
        server.close()
    # a scheduler whose certificate is not of the course's CA
    server = TLSServer(theirs / "scheduler.crt", theirs / "scheduler.key")
    try:
        code, error = grade_on(server.address, tmp_path, capsys, *with_certs)
        assert code == 2 and "holds no certificate of the course's CA" in error, error
    finally:
        server.close()
    # no certificate of ours to show
    code, error = grade_on(server.address, tmp_path, capsys, "--cluster-certs",
                           str(tmp_path / "nowhere"))
    assert code == 2 and error.startswith(
        f"error: No certificate for the grading cluster in {tmp_path / 'nowhere'}"), error
    assert "course-grade cluster-certs" in error
