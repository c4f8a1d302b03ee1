"""TLS contexts from PEM files: the API's server side, and the client side of a backend.

Owns loading certificates and keys into `ssl.SSLContext`s, and turning every way that can
fail (a missing file, a file that is not PEM, a key that does not match its certificate)
into one `TlsFilesError` whose message names the setting and the file, so the command line
can print one line instead of a traceback. Nothing else: which settings hold the files is
the composition root's business. Imports the standard library only.
"""

from __future__ import annotations

import ssl
from pathlib import Path


class TlsFilesError(ValueError):
    """A certificate, key or CA file could not be loaded; the message says which and why."""


def server_context(cert_file: Path, key_file: Path, *, setting: str = "tls") -> ssl.SSLContext:
    """An HTTPS server context: the certificate chain and its private key (TLS 1.2 or later)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(context, cert_file, key_file, setting)
    return context


def client_context(
    ca_file: Path | None,
    cert_file: Path | None = None,
    key_file: Path | None = None,
    *,
    setting: str,
    check_hostname: bool = True,
) -> ssl.SSLContext:
    """A client context that verifies the server: against `ca_file` alone, or the system's
    CAs when None; with a client certificate when `cert_file` is given (`key_file` may be
    None when the key is in the certificate's file)."""
    if ca_file is None:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # trusts nothing until told
        try:
            context.load_verify_locations(cafile=str(ca_file))
        except (OSError, ssl.SSLError, ValueError) as error:
            raise TlsFilesError(
                f"{setting}_ca_file {ca_file}: cannot load a CA certificate ({_reason(error)})"
            ) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if cert_file is not None:
        _load_chain(context, cert_file, key_file, setting)
    elif key_file is not None:
        raise TlsFilesError(f"{setting}_key_file is given without {setting}_cert_file")
    return context


def _load_chain(
    context: ssl.SSLContext, cert_file: Path, key_file: Path | None, setting: str
) -> None:
    for name, path in ((f"{setting}_cert", cert_file), (f"{setting}_key", key_file)):
        if path is not None and not Path(path).is_file():
            raise TlsFilesError(f"{_flag(name, setting)} {path}: no such file")
    try:
        context.load_cert_chain(
            str(cert_file), None if key_file is None else str(key_file), password=_no_password
        )
    except TlsFilesError as error:
        raise TlsFilesError(
            f"{_flag(setting + '_key', setting)} {key_file or cert_file}: {error}"
        ) from None
    except (OSError, ssl.SSLError, ValueError) as error:
        raise TlsFilesError(
            f"{_flag(setting + '_cert', setting)} {cert_file} with its key {key_file}: cannot"
            f" load the certificate and private key ({_reason(error)})"
        ) from None


def _no_password() -> bytes:
    # Without a callback, OpenSSL would prompt on the terminal for the key's passphrase.
    raise TlsFilesError("the private key is encrypted; give it unencrypted (mode 0600)")


def _flag(name: str, setting: str) -> str:
    """The setting's name as the other settings of its group spell it (tls_cert, ..._cert_file)."""
    return name if setting == "tls" else name + "_file"


# OpenSSL's reasons, in words an operator can act on.
_REASONS = {
    "PEM_LIB": "the file is not PEM, or not a certificate and its key",
    "KEY_VALUES_MISMATCH": "the key does not belong to the certificate",
    "NO_CERTIFICATE_OR_CRL_FOUND": "the file holds no PEM certificate",
    "CA_MD_TOO_WEAK": "the certificate is signed with a digest too weak to trust",
    "EE_KEY_TOO_SMALL": "the key is too small to trust",
}


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError):
        # Some failures come with no reason, only the library's text.
        reason = error.reason or ("PEM_LIB" if "PEM lib" in str(error) else None)
        if reason:
            return _REASONS.get(reason, reason.replace("_", " ").lower())
    reason = getattr(error, "strerror", None) or str(error)
    return str(reason).lower()
