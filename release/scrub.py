"""What may be published: a release's texts scrubbed of secrets and local paths (public), the strings that
must never appear in it (forbidden_strings), and the refusal when one does (assert_no_leaks). Apart from
release.rows so the rule reads on its own; the rows, the card and its markdown use it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError

SECRET_KEY_RE = re.compile(r"(token|secret|password|passwd|api_?key|credential)s?$", re.I)
SECRET_ENV_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|API_?KEY|CREDENTIAL)", re.I)


def public(value: Any) -> Any:
    """A copy safe to publish: secret-looking keys dropped, local paths cut to their last part."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items()
                if not (SECRET_KEY_RE.search(str(k)) and not str(k).endswith("_env"))}
    if isinstance(value, list | tuple):
        return [public(v) for v in value]
    if isinstance(value, str):
        if value.startswith(("/", "~", "./", "../", "file:")) or re.match(r"^[A-Za-z]:[\\/]", value):
            return "<local>/" + re.split(r"[\\/]", value.rstrip("/\\"))[-1]
        return re.sub(r"(https?://)[^/@\s]+@", r"\1", value)  # credentials inside URLs
    return value


def forbidden_strings(workspace_root: Path) -> list[str]:
    """Strings that must never appear in a release: the workspace path and secret env values."""
    found = [str(workspace_root)]
    for name, value in os.environ.items():
        if SECRET_ENV_RE.search(name) and not name.endswith("_ENV") and len(value) >= 8:
            found.append(value)
    return found


def assert_no_leaks(texts: Iterable[tuple[str, str]], forbidden: list[str]) -> None:
    """Refuse to publish if a forbidden string made it into any text (named by where, not what)."""
    for where, text in texts:
        for secret in forbidden:
            if secret and secret in text:
                what = "the workspace path" if secret == forbidden[0] else "a secret from the environment"
                raise WorkbenchError(f"refusing to write the release: {what} appears in {where}")
