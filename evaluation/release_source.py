"""Where a release named by --release is: a local release folder, or a dataset on the Hub. Decided before
anything is downloaded, so that a mistyped folder never becomes a Hub lookup with minutes of retries.

    locate_release("workspace/release")  ->  ("/abs/workspace/release", True)
    locate_release("org/aor-bench")      ->  ("org/aor-bench", False), after one request to $HF_ENDPOINT

A source that names a folder (it exists; or it starts with ., / or ~, ends with /, has more than one /, or
its first part is a folder here, as `workspace/release` when workspace/ exists) is a folder, and a missing
one is an error at once. Anything else of the form ORG/NAME is asked of the Hub once (no retries, a short
timeout, the token in $HF_TOKEN): a dataset that is not there, or that the token cannot read, is an error
in a second. With HF_HUB_OFFLINE set nothing is asked: `datasets` reads its cache.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from construction.core.errors import WorkbenchError
from construction.core.redact import redact, url_password

HUB_ID_RE = re.compile(r"^[\w.-]+/[\w.-]+$")
HUB_TIMEOUT_S = 10.0


def locate_release(source: str, revision: str | None = None) -> tuple[str, bool]:
    """(what to load: a folder's absolute path or the Hub id, whether it is a local folder)."""
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "data").is_dir():
            raise WorkbenchError(f"{path} is not a release folder (no data/ inside); "
                                 "write one with python -m release.export")
        return str(path.resolve()), True
    if path.exists():
        raise WorkbenchError(f"--release {source} is a file; give the release folder or a Hub id ORG/NAME")
    if names_a_folder(source):
        raise WorkbenchError(f"--release {source}: no such folder (looked in {Path.cwd()}); give the folder "
                             "release.export wrote, or a Hub id ORG/NAME")
    if not HUB_ID_RE.match(source):
        raise WorkbenchError(f"--release {source}: no such folder, and not a Hub dataset id ORG/NAME")
    _check_hub_dataset(source, revision, hub_endpoint())
    return source, False


def names_a_folder(source: str) -> bool:
    """Whether `source` can only mean a folder (not an ORG/NAME Hub id)."""
    return (source.startswith((".", "/", "~")) or source.endswith("/") or "\\" in source
            or source.count("/") != 1 or Path(source.split("/", 1)[0]).expanduser().is_dir())


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def shown_endpoint(endpoint: str) -> str:
    return redact(endpoint, [url_password(endpoint)])  # credentials inside $HF_ENDPOINT are never shown


@lru_cache(maxsize=32)
def _check_hub_dataset(repo_id: str, revision: str | None, endpoint: str) -> None:
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    if constants.HF_HUB_OFFLINE:
        return
    token = os.environ.get("HF_TOKEN") or None
    where = shown_endpoint(endpoint)
    try:
        HfApi(endpoint=endpoint, token=token or False).dataset_info(repo_id, revision=revision,
                                                                     timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        raise WorkbenchError(f"--release {repo_id}: the Hub dataset at {where} is gated; accept its conditions "
                             "on its page and set HF_TOKEN to a token of that account") from None
    except RevisionNotFoundError:
        raise WorkbenchError(f"--release {repo_id}: the Hub dataset at {where} has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        reader = "HF_TOKEN" if token else "an anonymous request (HF_TOKEN is not set)"
        raise WorkbenchError(f"--release {repo_id}: no such folder here ({Path.cwd()}), and no Hub dataset "
                             f"{repo_id} at {where} that {reader} can read") from None
    except (HfHubHTTPError, OSError) as exc:
        raise WorkbenchError(f"cannot look up the Hub dataset {repo_id} at {where}: {redact(exc, [token])}") from None
    except Exception as exc:  # the HTTP client's own errors (connection refused, timeouts)
        if type(exc).__module__.startswith(("httpx", "requests", "urllib3")):
            raise WorkbenchError(f"cannot reach the Hub at {where} to look up {repo_id}: "
                                 f"{redact(exc, [token])}") from None
        raise
