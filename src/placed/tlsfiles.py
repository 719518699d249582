"""The PEM files of TLS, loaded into an `ssl.SSLContext` with errors that say which file
holds what: `placed serve`'s certificate, key and client CA, and a client's CA bundle,
certificate and key. Each error names the option (or variable) the file was given by."""

from __future__ import annotations

import ssl


class TlsFileError(ValueError):
    """A file that is not what its option says: `option` names it, `message` says why."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


def _readable(path: str, option: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise TlsFileError(option, f"cannot read {path}: {error.strerror or error}") from None


def _holds_certificate(path: str) -> bool:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError:
        return False
    return True


def load_identity(
    context: ssl.SSLContext, cert: str, key: str | None, cert_option: str, key_option: str
) -> None:
    """The certificate (its chain after it) and its private key, which a key of None
    means is in the certificate's file."""
    _readable(cert, cert_option)
    if key is not None:
        _readable(key, key_option)
    if not _holds_certificate(cert):
        raise TlsFileError(cert_option, f"{cert} holds no PEM certificate")
    try:
        # The password callback answers "" so that an encrypted key fails here rather
        # than OpenSSL prompting on the terminal for its password.
        context.load_cert_chain(cert, key, lambda: "")
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise TlsFileError(
                key_option if key else cert_option,
                f"the key in {key or cert} is not the key of the certificate in {cert}",
            ) from None
        if key is None:
            raise TlsFileError(
                cert_option, f"{cert} holds no private key: give {key_option} FILE"
            ) from None
        raise TlsFileError(
            key_option, f"{key} holds no private key placed reads (PEM, unencrypted)"
        ) from None


def load_authorities(context: ssl.SSLContext, path: str, option: str) -> None:
    """The CA certificates of a PEM bundle, to verify the other side's certificate with."""
    _readable(path, option)
    try:
        context.load_verify_locations(cafile=path)
    except ssl.SSLError:
        raise TlsFileError(option, f"{path} holds no PEM certificate") from None
