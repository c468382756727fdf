"""A certificate authority of the test's own, made with the ``openssl`` command, and a server
certificate it signs for a list of host names (subjectAltName DNS entries)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TestCerts:
    __test__ = False
    ca: Path            # the CA certificate (what --ca-bundle names)
    cert: Path          # the server's certificate
    key: Path           # the server's private key


def openssl_missing() -> str | None:
    return None if shutil.which("openssl") else "the openssl command is not installed"


def _run(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {r.stderr}")


def make_certs(directory: Path, names: list[str], ca_name: str = "ABC test CA") -> TestCerts:
    """A fresh CA (EC P-256, two days) and a server certificate for ``names`` signed by it."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", f"/CN={ca_name}",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=abc test web", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=" + ",".join(f"DNS:{n}" for n in names) + "\n"
                               "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    _run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return TestCerts(d / "ca.pem", d / "server.pem", d / "server.key")
