"""The HTTP side of talking to Label Studio: the SDK client (no retries, no proxies) and the mapping of
every failure to a WorkbenchError that names the server and what was being done, by HTTP status code
(some endpoints answer 404 with a 30 kB HTML page, so response bodies are only ever shown as a short JSON
detail), never showing the token. annotation.labelstudio builds on it."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx

from construction.core.errors import WorkbenchError


def _short_detail(body: Any) -> str:
    """A short, safe description of an error body: JSON detail/validation errors only, never HTML."""
    if not isinstance(body, dict):
        return ""
    parts = []
    if body.get("validation_errors"):
        parts.append(json.dumps(body["validation_errors"], ensure_ascii=False))
    elif body.get("detail"):
        parts.append(str(body["detail"]))
    text = "; ".join(parts)
    return text if len(text) <= 300 else text[:297] + "..."


@contextlib.contextmanager
def server_errors(url: str, what: str, not_found: str = "", log_hint: str = "see the server's log",
                  start: str = "Start it with: python -m annotation.server start") -> Iterator[None]:
    """`start`: what to do (a complete command) when the server cannot be reached."""
    from label_studio_sdk.core.api_error import ApiError

    try:
        yield
    except ApiError as e:
        code = e.status_code
        if code == 401:
            msg = (f"Label Studio at {url} rejected the API token (HTTP 401) while {what}; "
                   "set LABEL_STUDIO_API_KEY to the admin's token")
        elif code == 403:
            msg = f"Label Studio at {url} refused access (HTTP 403) while {what}; the token's user may not do this"
        elif code == 404:
            msg = f"Label Studio at {url} answered 404 (not found) while {what}" + (f"; {not_found}" if not_found else "")
        elif code is not None and code >= 500:
            msg = f"Label Studio at {url} failed with HTTP {code} while {what}; {log_hint}"
        else:
            detail = _short_detail(e.body)
            msg = f"Label Studio at {url} answered HTTP {code} while {what}" + (f": {detail}" if detail else "")
        raise WorkbenchError(msg) from e
    except httpx.TimeoutException as e:
        raise WorkbenchError(f"Label Studio at {url} did not answer in time while {what} ({type(e).__name__})") from e
    except (httpx.LocalProtocolError, UnicodeEncodeError) as e:  # never sent: not a server that is down
        raise WorkbenchError(f"could not send a request to Label Studio at {url} while {what}: a header holds a "
                             f"character HTTP forbids (a token with a newline or a non-ASCII character?)") from e
    except httpx.TransportError as e:
        raise WorkbenchError(
            f"cannot reach Label Studio at {url} while {what} ({e}); is it running? {start}") from e
    except json.JSONDecodeError as e:
        raise WorkbenchError(f"Label Studio at {url} sent a response that is not JSON while {what}") from e


def make_client(url: str, token: str, timeout_s: float = 300.0) -> Any:
    """An SDK client without retries (a retried import could duplicate tasks) that ignores proxy
    variables (the server is on loopback)."""
    from label_studio_sdk import LabelStudio

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the output
    http = httpx.Client(trust_env=False, timeout=timeout_s, follow_redirects=True)
    return LabelStudio(base_url=url, api_key=token, timeout=timeout_s, max_retries=0, httpx_client=http)
