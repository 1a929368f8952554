"""Keep credentials out of everything the workbench prints, logs or writes.

    redact(text, secrets=(api_key,))  ->  the text with secrets replaced by ***

Removed: credentials inside URLs (`http://user:pw@host` -> `http://***@host`), the values given in
`secrets`, the value of every environment variable whose name looks secret (*TOKEN*, *SECRET*,
*PASSWORD*, *API_KEY*, *_KEY, *CREDENTIAL*; 8 characters or more), key-shaped strings (`sk-...`,
`hf_...`, GitHub tokens) and HTTP authorization values (`Bearer ...`, `Basic ...`). A secret is masked in
the forms a model's answer may echo it too: in any letter case, with spaces or zero-width characters
between its characters, base64-encoded (alone or inside a longer base64 text), or as a prefix of 12
characters or more. Servers echo keys in
their error text ("Incorrect API key provided: sk-...") and HTTP clients log URLs, so every message built
from a server's answer or an endpoint URL goes through here, and `RedactingFilter` guards the log.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

MASK = "***"
SECRET_ENV_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|_KEY$|CREDENTIAL)", re.I)
# Every pattern below runs in time linear in the text (the evaluation redacts answers of any length): the
# userinfo pattern starts at "://" (it never rescans a scheme), and repeats that could give back what they
# took are possessive (*+), so no start position rescans the run after it.
_URL_USERINFO = re.compile(r"(?<=[A-Za-z0-9+.-])://[^/?#@\s]++@")
_KEY_SHAPED = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}+|hf_[A-Za-z0-9]{8,}+|gh[pousr]_[A-Za-z0-9]{8,}+)")
# an Authorization value: the scheme, then a token with a digit or symbol in it (not "Basic authentication")
_AUTH_VALUE = re.compile(r"\b(Bearer|Basic|Token)\s++(?=[A-Za-z]*+[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}+", re.I)
MIN_SECRET_LEN = 6  # shorter values ("k", "none") are no secret, and masking them would garble messages
PREFIX_LEN = 12  # an echoed prefix this long is masked (a shorter one cannot be told from ordinary text)
_GAP_CHARS = "\\s\u200b-\u200f\u2060\ufeff\u00ad"  # spaces and zero-width characters put between its characters
_GAP = f"[{_GAP_CHARS}]*+"
_IS_GAP = re.compile(f"[{_GAP_CHARS}]")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_B64_TAIL = re.compile(r"[A-Za-z0-9+/_-]*+=*+")


def env_secrets() -> list[str]:
    """Values of environment variables whose names look secret (a *_ENV variable names one: not secret)."""
    return [value for name, value in os.environ.items()
            if SECRET_ENV_RE.search(name) and not name.upper().endswith("_ENV") and len(value) >= 8]


def redact(text: Any, secrets: Iterable[str | None] = ()) -> str:
    """str(text) with URL credentials, the given secrets, secret env values and key-shaped strings masked,
    in time linear in its length (a caller that keeps only a part cuts it first: that is faster still)."""
    text = str(text)
    for value in sorted({s for s in (*secrets, *env_secrets()) if s and len(s) >= MIN_SECRET_LEN},
                        key=len, reverse=True):  # longest first: a key that contains another is masked whole
        text = text.replace(value, MASK)
        spread, base64_core = _echo_patterns(value)
        text = _mask_base64_runs(spread.sub(MASK, text), base64_core)
    text = _URL_USERINFO.sub(f"://{MASK}@", text)
    text = _AUTH_VALUE.sub(rf"\1 {MASK}", text)
    return _KEY_SHAPED.sub(MASK, text)


@lru_cache(maxsize=64)
def _echo_patterns(secret: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The transformed echoes of a secret: (any case, its characters spread by spaces or zero-width
    characters, or a prefix of PREFIX_LEN+ characters with the rest of the word; the base64 characters
    that the secret alone decides, at each of the three alignments, standard and URL-safe). A base64 match
    is masked with the whole base64 run around it (_mask_base64_runs)."""
    chars = [c for c in secret if not _IS_GAP.match(c)]  # a space in the secret is a gap like any other
    forms = [_GAP.join(re.escape(c) for c in chars)]
    if len(chars) > PREFIX_LEN:
        forms.append(_GAP.join(re.escape(c) for c in chars[:PREFIX_LEN]) + r"[^\s*]*+")
    raw, cores = secret.encode(), set()
    for pad in range(3):  # the secret after 0, 1 or 2 other bytes: the base64 characters it alone decides
        encoded = base64.b64encode(b"\0" * pad + raw).decode()
        core = encoded[-(-8 * pad // 6):8 * (pad + len(raw)) // 6]  # no bit of it from a neighbouring byte
        cores |= {form for form in (core, core.replace("+", "-").replace("/", "_")) if len(form) >= 8}
    b64 = re.compile("|".join(re.escape(c) for c in sorted(cores)), re.IGNORECASE) if cores else None
    return re.compile("|".join(forms), re.IGNORECASE), b64


def _mask_base64_runs(text: str, core: re.Pattern[str] | None) -> str:
    """Each base64 run (with its = padding) that holds a match of `core` becomes MASK. One pass: a search
    resumes after the run it masked, and the look back for the run's start stops where the last run ended."""
    if core is None:
        return text
    parts, done, pos = [], 0, 0
    while (found := core.search(text, pos)) is not None:
        start = found.start()
        while start > done and text[start - 1] in _B64_CHARS:
            start -= 1
        end = _B64_TAIL.match(text, found.end()).end()
        parts += [text[done:start], MASK]
        done = pos = end
    return "".join(parts) + text[done:] if parts else text


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
