"""Who may join the grading cluster: a course CA, certificates signed by it for the
scheduler, the workers and the instructor's client (`course-grade cluster-certs`), and the
grader's check that a scheduler admits only their holders (TLS with mutual authentication:
a scheduler started with `--tls-ca-file` refuses a connection without a certificate of
that CA).

Dask checks a certificate's CA, not its role or host name: any of the course's
certificates admits its holder in any role, so each key stays on the machines of its role.
"""

from __future__ import annotations

import datetime
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
from pathlib import Path

from autograder.errors import CourseError

ROLES = ("scheduler", "worker", "client")
DAYS = 400  # a term and its resits; then make new ones
WHO_KEEPS = {  # the files each machine holds
    "scheduler": ("ca.crt", "scheduler.crt", "scheduler.key"),
    "worker": ("ca.crt", "worker.crt", "worker.key"),
    "client": ("ca.crt", "client.crt", "client.key"),
}


def default_folder() -> Path:
    """Where `course-grade cluster-certs` writes and `course-grade class --scheduler` looks."""
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "course-grade" / "cluster-certs"


def flags(folder: Path, role: str) -> list[str]:
    """`dask scheduler` / `dask worker` options that make it use the course's certificate."""
    folder = Path(folder)
    return ["--tls-ca-file", str(folder / "ca.crt"), "--tls-cert", str(folder / f"{role}.crt"),
            "--tls-key", str(folder / f"{role}.key")]


# ---------------------------------------------------------------------------------------
# Making them (once per course, on the instructor's machine)
# ---------------------------------------------------------------------------------------

def make(folder: Path) -> str:
    """A CA and a certificate for each role in `folder` (made here, keys 0600); what to copy
    where, as lines to print."""
    folder = Path(folder).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise CourseError(f"{folder} exists already: the cluster's certificates are made once"
                          "; pass another --out, or remove that folder first (every machine"
                          " of the cluster then needs the new files).")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    files = _with_cryptography() if _has_cryptography() else _with_openssl()
    for name, data in files.items():
        descriptor = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o600 if name.endswith(".key") else 0o644)
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
    return "\n".join([
        f"The grading cluster's CA and certificates are in {folder} (keys readable by you only).",
        *(f"  {role}: {', '.join(names)}" for role, names in WHO_KEEPS.items()),
        "Copy the scheduler's files to the scheduler's machine and the worker's to each "
        "grading machine; ca.key signed them and goes nowhere.",
    ])


def _has_cryptography() -> bool:
    try:
        import cryptography.x509  # noqa: F401
    except ImportError:
        return False
    return True


def _with_cryptography() -> dict[str, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "course-grade"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def pem(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder().issuer_name(name("course-grade cluster CA"))
               .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=DAYS))
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   ca_key.public_key()), critical=False))
    ca = (builder.subject_name(name("course-grade cluster CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    files = {"ca.key": pem(ca_key), "ca.crt": ca.public_bytes(serialization.Encoding.PEM)}
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (builder.subject_name(name(f"course-grade {role}")).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"dask-{role}")]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        files[f"{role}.key"] = pem(key)
        files[f"{role}.crt"] = cert.public_bytes(serialization.Encoding.PEM)
    return files


def _with_openssl() -> dict[str, bytes]:
    """The same files with the `openssl` command, where `cryptography` is not installed."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CourseError("Making the cluster's certificates needs Python's `cryptography` "
                          "package or the `openssl` command: install one of them.")
    with tempfile.TemporaryDirectory(prefix="course-grade-certs-") as tmp:
        def run(*args: str) -> None:
            done = subprocess.run([openssl, *args], cwd=tmp, capture_output=True, text=True)
            if done.returncode:
                raise CourseError(f"openssl {args[0]} failed: {done.stderr.strip()[:300]}")

        curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.crt", "-days", str(DAYS),
            "-subj", "/O=course-grade/CN=course-grade cluster CA",
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        for role in ROLES:
            Path(tmp, f"{role}.ext").write_text(
                "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n"
                f"subjectAltName=DNS:dask-{role}\n")
            run("req", "-new", *curve, "-keyout", f"{role}.key", "-out", f"{role}.csr",
                "-subj", f"/O=course-grade/CN=course-grade {role}")
            run("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{role}.crt", "-days", str(DAYS),
                "-extfile", f"{role}.ext")
        return {name: Path(tmp, name).read_bytes() for role in ("ca", *ROLES)
                for name in (f"{role}.key", f"{role}.crt")}


# ---------------------------------------------------------------------------------------
# The grader's side: its certificate, and a scheduler that must ask for one
# ---------------------------------------------------------------------------------------

def client_security(folder: Path):
    """A `distributed.Security` for the instructor's client: encryption required, the
    course's CA, and the client's certificate."""
    from distributed.security import Security

    folder = Path(folder).expanduser()
    missing = [n for n in WHO_KEEPS["client"] if not (folder / n).is_file()]
    if missing:
        raise CourseError(f"No certificate for the grading cluster in {folder} (no "
                          f"{', '.join(missing)}): make the course's certificates with "
                          "`course-grade cluster-certs`, or pass the folder that holds them "
                          "with --cluster-certs DIR.")
    return Security(require_encryption=True, tls_ca_file=str(folder / "ca.crt"),
                    tls_client_cert=str(folder / "client.crt"),
                    tls_client_key=str(folder / "client.key"))


def connect(address: str, folder: Path | None, insecure: bool, timeout: float, log=print):
    """A `distributed.Client` of the scheduler at `address`, with the course's client
    certificate; raises CourseError, in one sentence, when the scheduler would admit anyone
    (unless `insecure`) or does not answer."""
    from distributed import Client

    security = security_for(address, folder, insecure, timeout)
    if insecure:
        log(f"note: grading on {address} without checking that it admits only the course's "
            "certificates (--insecure-cluster)")
    try:
        return Client(address, timeout=timeout, set_as_default=False, security=security)
    except Exception as error:  # OSError, TimeoutError, ValueError for a bad address
        raise CourseError(
            f"No Dask scheduler answers at {address} ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:160] if str(error) else 'no answer'}): start "
            "one with `dask scheduler` and the course's certificates, and pass the "
            "address it prints, e.g. tls://HOST:8786.") from None


def security_for(address: str, folder: Path | None, insecure: bool, timeout: float):
    """The `distributed.Security` to connect to `address` with (None: Dask's own settings);
    raises CourseError when the scheduler there would admit anyone, unless `insecure`."""
    scheme = address.split("://", 1)[0] if "://" in address else "tcp"  # Dask's default
    if insecure and (scheme != "tls" or folder is None and not default_folder().is_dir()):
        return None  # no certificate to show: Dask's configuration decides
    if scheme != "tls":
        raise CourseError(
            f"Not grading on {address}: a {scheme}:// scheduler admits anyone who reaches it; "
            "start it with the course's certificates (`course-grade cluster-certs`, then "
            "`dask scheduler --tls-ca-file ... --tls-cert ... --tls-key ...` as the README "
            "says) and pass its tls:// address, or pass --insecure-cluster to grade on it "
            "anyway.")
    security = client_security(folder or default_folder())
    if not insecure:
        _check_asks(address, security.tls_ca_file, min(timeout, 3.0))
    return security


def _check_asks(address: str, ca_file: str, timeout: float) -> None:
    """Raises CourseError unless the TLS server at `address` holds a certificate of the
    course's CA and refuses a connection that brings none."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        host, port = parse_host_port(parse_address(address)[1], 8786)
        raw = socket.create_connection((host, port), timeout=timeout)
    except (OSError, ValueError):
        return  # nothing answers there: the client's connection says so
    context = ssl.create_default_context(cafile=ca_file)
    context.check_hostname = False  # as Dask: the CA is the course's own
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with raw:
        try:
            tls = context.wrap_socket(raw)  # the handshake, bringing no certificate
        except ssl.SSLCertVerificationError:
            raise CourseError(
                f"Not grading on {address}: the scheduler there holds no certificate of the "
                f"course's CA ({ca_file}); start it with the scheduler.crt and scheduler.key "
                "made with that CA.") from None
        except OSError:  # refused (TLS 1.2), or no TLS server: the client's connection says
            return
        with tls:
            try:
                if not tls.recv(1):  # TLS 1.3: a server that wants a certificate refuses
                    return  # here, with an alert (or it hangs up)
            except (ssl.SSLError, ConnectionError):
                return
            except OSError:  # a timeout: it kept a connection that brought none
                pass
    raise CourseError(
        f"Not grading on {address}: that scheduler admits a connection without a "
        "certificate; start it with --tls-ca-file (the course's ca.crt) so that it asks for "
        "one, or pass --insecure-cluster to grade on it anyway.")
