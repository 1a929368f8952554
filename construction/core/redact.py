"""Keep credentials out of everything the workbench prints, logs or writes.

    redact(text, secrets=(api_key,))  ->  the text with secrets replaced by ***

Removed: credentials inside URLs (`http://user:pw@host` -> `http://***@host`), the values given in
`secrets`, the value of every environment variable whose name looks secret (*TOKEN*, *SECRET*,
*PASSWORD*, *API_KEY*, *_KEY, *CREDENTIAL*; 8 characters or more), key-shaped strings (`sk-...`,
`hf_...`, GitHub tokens) and HTTP authorization values (`Bearer ...`, `Basic ...`). Servers echo keys in
their error text ("Incorrect API key provided: sk-...") and HTTP clients log URLs, so every message built
from a server's answer or an endpoint URL goes through here, and `RedactingFilter` guards the log.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import Any

MASK = "***"
SECRET_ENV_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|_KEY$|CREDENTIAL)", re.I)
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]+@")
_KEY_SHAPED = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,})")
# an Authorization value: the scheme, then a token with a digit or symbol in it (not "Basic authentication")
_AUTH_VALUE = re.compile(r"\b(Bearer|Basic|Token)\s+(?=[A-Za-z0-9._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}",
                         re.I)
MIN_SECRET_LEN = 6  # shorter values ("k", "none") are no secret, and masking them would garble messages


def env_secrets() -> list[str]:
    """Values of environment variables whose names look secret (a *_ENV variable names one: not secret)."""
    return [value for name, value in os.environ.items()
            if SECRET_ENV_RE.search(name) and not name.upper().endswith("_ENV") and len(value) >= 8]


def redact(text: Any, secrets: Iterable[str | None] = ()) -> str:
    """str(text) with URL credentials, the given secrets, secret env values and key-shaped strings masked."""
    text = str(text)
    for value in sorted({s for s in (*secrets, *env_secrets()) if s and len(s) >= MIN_SECRET_LEN},
                        key=len, reverse=True):  # longest first: a key that contains another is masked whole
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _AUTH_VALUE.sub(rf"\1 {MASK}", text)
    return _KEY_SHAPED.sub(MASK, text)


def url_password(url: str | None) -> str | None:
    """The password inside a URL (http://user:PASSWORD@host), to pass to redact() as a secret."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url or "").password
    except ValueError:
        return None
    return unquote(password) if password else None


def redact_data(value: Any) -> Any:
    """A copy of a JSON-like structure with every string redacted (for config snapshots)."""
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return redact(value) if isinstance(value, str) else value


class RedactingFilter(logging.Filter):
    """A handler filter: every log line is redacted before it is written (httpx logs request URLs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
