"""TLS: the trusted certificate authorities of a crawl, and TLS failures by kind.

Certificates are always verified (peer and host name). The CAs trusted are
``--ca-bundle FILE`` (PEM) or, without it, the system's bundle: OpenSSL's
default file, else the first of the usual paths of Debian/Ubuntu, RHEL/Fedora,
SUSE and Alpine. The search matters: the libcurl inside the ``pycurl`` wheel
was built on RHEL and looks for ``/etc/pki/tls/certs/ca-bundle.crt``, which a
Debian host does not have (every https request would fail). Rank 0 reads the
bundle and sends its bytes to every rank (curl's ``CAINFO_BLOB``), so all ranks
trust the same CAs wherever they run; each rank then keeps a private copy in an
anonymous in-memory file (``memfd_create``, named ``/proc/self/fd/N``) for curl's ``CAINFO``,
which lets libcurl parse it once and cache it instead of once per connection. Nothing is
written to disk, so a rank that is killed leaves no file behind.

:func:`tls_error_kind` turns a libcurl TLS error into the kind counted in
``stats.json["errors"]``.

>>> tls_error_kind(60, "SSL certificate problem: unable to get local issuer certificate")
'tls_unknown_issuer'
>>> tls_error_kind(60, "SSL: no alternative certificate subject name matches target host name 'a.test'")
'tls_hostname_mismatch'
>>> tls_error_kind(35, "OpenSSL/3.0: error:0A00010B:SSL routines::wrong version number")
'tls_handshake_failed'
>>> tls_error_kind(7, "Failed to connect") is None
True
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field

from ..exceptions import ConfigError

__all__ = ["CaBundle", "load_ca_bundle", "system_bundle_path", "tls_error_kind", "SYSTEM_BUNDLES"]

#: where distributions keep the system CA bundle (as Go's crypto/x509 searches them)
SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",                # Debian, Ubuntu, Gentoo, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",                  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",                            # openSUSE
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # RHEL 7
    "/etc/ssl/cert.pem",                                 # Alpine, macOS
)

#: largest CA bundle accepted (the Mozilla bundle is about 220 KB)
MAX_BUNDLE_BYTES = 16 << 20


@dataclass(frozen=True)
class CaBundle:
    """The PEM bytes of the trusted CAs and where they came from (``system:PATH`` or the user's path)."""

    pem: bytes
    source: str
    #: the SHA-256 of :attr:`pem`, taken once (``path()`` is asked for every new curl handle)
    key: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", hashlib.sha256(self.pem).digest())

    def path(self) -> str:
        """A file name holding :attr:`pem` in this process (made once per process): an anonymous
        in-memory file where the system has ``memfd_create`` (nothing on disk, gone with the
        process however it ends), else a temporary file removed at exit."""
        key = self.key
        holder = _COPIES.get(key)
        if holder is None:
            holder = _COPIES[key] = _private_copy(self.pem)
        return holder


#: one private file per distinct bundle content in this process. Keyed by the bytes' digest, not
#: by ``id()``: a freed bundle's id is reused by the next one, which would then be handed the old
#: bundle's file (a crawl would trust CAs it was never given).
_COPIES: dict[bytes, str] = {}


def _private_copy(pem: bytes) -> str:
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("abc-ca", 0)          # kept open for the process's lifetime
        view = memoryview(pem)
        while view:
            view = view[os.write(fd, view):]
        return f"/proc/self/fd/{fd}"
    fd, name = tempfile.mkstemp(prefix="abc-ca-", suffix=".pem")
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    import atexit

    atexit.register(_remove, name)
    return name


def _remove(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def system_bundle_path() -> str | None:
    """The system's CA bundle file, or None when none is found."""
    import ssl              # rank 0 only, once (with ``_ssl``, 4 ms of every rank's start-up)

    cands = []
    paths = ssl.get_default_verify_paths()
    for p in (paths.cafile, paths.openssl_cafile):
        if p:
            cands.append(p)
    cands.extend(SYSTEM_BUNDLES)
    for p in cands:
        if os.path.isfile(p):
            return p
    return None


def load_ca_bundle(path: str | None) -> CaBundle | None:
    """Rank 0: the CAs of ``--ca-bundle`` (ConfigError naming the file when unusable), or the
    system's (None when the system has none: https then fails, counted by kind)."""
    source, system = path, path is None
    if system:
        path = system_bundle_path()
        if path is None:
            return None
        source = f"system:{path}"
    try:
        with open(path, "rb") as fh:
            pem = fh.read(MAX_BUNDLE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"ca-bundle: {path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"ca-bundle: {path}: cannot read ({exc.strerror})") from None
    if len(pem) > MAX_BUNDLE_BYTES:
        raise ConfigError(f"ca-bundle: {path}: larger than {MAX_BUNDLE_BYTES >> 20} MiB")
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise ConfigError(f"ca-bundle: {path}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
    if system:                          # curl reads the system's bundle as it is (parsing its ~140
        return CaBundle(pem, source)    # CAs here cost 25 ms a crawl; a broken one fails as tls_ca_bundle)
    import ssl

    try:
        ctx = ssl.create_default_context(cadata=pem.decode("ascii", errors="replace"))
    except ssl.SSLError as exc:
        raise ConfigError(f"ca-bundle: {path}: not a usable PEM bundle ({exc.reason or exc})") from None
    if not ctx.get_ca_certs():
        raise ConfigError(f"ca-bundle: {path}: holds no CA certificate")
    return CaBundle(pem, source)


# libcurl error codes of TLS failures (curl/curl.h)
_TLS_CODES = {
    35: "tls_handshake_failed",      # CURLE_SSL_CONNECT_ERROR
    53: "tls_engine",                # CURLE_SSL_ENGINE_NOTFOUND
    54: "tls_engine",                # CURLE_SSL_ENGINE_SETFAILED
    58: "tls_client_cert",           # CURLE_SSL_CERTPROBLEM
    59: "tls_cipher",                # CURLE_SSL_CIPHER
    64: "tls_required",              # CURLE_USE_SSL_FAILED
    66: "tls_engine",                # CURLE_SSL_ENGINE_INITFAILED
    77: "tls_ca_bundle",             # CURLE_SSL_CACERT_BADFILE
    80: "tls_shutdown_failed",       # CURLE_SSL_SHUTDOWN_FAILED
    82: "tls_crl",                   # CURLE_SSL_CRL_BADFILE
    83: "tls_issuer",                # CURLE_SSL_ISSUER_ERROR
    90: "tls_pinned_key",            # CURLE_SSL_PINNEDPUBKEYNOTMATCH
    91: "tls_cert_status",           # CURLE_SSL_INVALIDCERTSTATUS
    98: "tls_client_cert",           # CURLE_SSL_CLIENTCERT
}
# CURLE_PEER_FAILED_VERIFICATION (60): the kind is in OpenSSL's message
_VERIFY_KINDS = (
    ("no alternative certificate subject name", "tls_hostname_mismatch"),
    ("does not match target host name", "tls_hostname_mismatch"),
    ("subject name", "tls_hostname_mismatch"),
    ("self-signed certificate in certificate chain", "tls_self_signed"),
    ("self signed certificate in certificate chain", "tls_self_signed"),
    ("self-signed certificate", "tls_self_signed"),
    ("self signed certificate", "tls_self_signed"),
    ("unable to get local issuer", "tls_unknown_issuer"),
    ("unable to get issuer", "tls_unknown_issuer"),
    ("unable to verify the first certificate", "tls_unknown_issuer"),
    ("certificate has expired", "tls_expired"),
    ("certificate is not yet valid", "tls_not_yet_valid"),
    ("certificate revoked", "tls_revoked"),
    ("unsuitable certificate purpose", "tls_bad_purpose"),
)


def tls_error_kind(errno: int, message: str) -> str | None:
    """The kind of a libcurl TLS failure (``tls_…``), or None when ``errno`` is not one."""
    if errno == 60:
        low = message.lower()
        for needle, kind in _VERIFY_KINDS:
            if needle in low:
                return kind
        return "tls_verify_failed"
    return _TLS_CODES.get(errno)
