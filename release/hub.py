"""Push a written release to the Hugging Face Hub; apart from release.export, which only writes folders.

`huggingface_hub.HfApi` against $HF_ENDPOINT (default the Hub), token only from $HF_TOKEN;
create_repo(exist_ok), a visibility check, upload_folder + a tag named after the version. The commit
deletes what an earlier version left under the release's own folders (data/, controls/, plots/), so the
repo and its tag hold exactly the pushed release. create_repo ignores `private` for a repo that exists:
a private push into a public repo is refused unless --make-private asks to change the repo. A release
whose labels came from scripted demo annotators (annotation source "demo") is never pushed.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from construction.core.errors import WorkbenchError

if TYPE_CHECKING:
    from release.inputs import ReleaseSummary

# the folders a release writes whole: remote files under them that the new release lacks are deleted
RELEASE_FOLDERS = ("data", "controls", "plots")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_token() -> str:
    token = os.environ.get("HF_TOKEN", "").strip()
    if not token:
        raise WorkbenchError("HF_TOKEN is not set: export a Hugging Face write token as HF_TOKEN to push "
                             "(the token is read only from the environment)")
    return token


def describe_push(summary: ReleaseSummary, repo_id: str, private: bool, make_private: bool = False) -> str:
    visibility = ("private; an existing public repo is made private" if make_private else
                  "private; refused if the repo exists and is public" if private else
                  "public unless the repo exists and is private")
    lines = [f"dry run: nothing sent. Would push {summary.out} to {hub_endpoint()}",
             f"  repo: datasets/{repo_id} ({visibility}; created if missing)",
             f"  tag:  {summary.version}",
             f"  deletes: files under {', '.join(f + '/' for f in RELEASE_FOLDERS)} that this release lacks",
             f"  files: {len(summary.files)}, {summary.total_bytes / 1e6:.2f} MB"]
    lines += [f"    {size:>12,d}  {rel}" for rel, size in summary.files.items()]
    lines.append(f"  HF_TOKEN is {'set' if os.environ.get('HF_TOKEN') else 'NOT set (a real push needs it)'}")
    return "\n".join(lines)


def push_release(summary: ReleaseSummary, repo_id: str, private: bool = False,
                 make_private: bool = False) -> tuple[str, bool]:
    """create_repo + visibility check + upload_folder + create_tag; returns the tagged commit id and
    whether the repo is private. `make_private` turns an existing public repo private first."""
    if summary.demo:
        raise WorkbenchError("this release was labelled by scripted demo annotators; refusing to push it")
    token = hub_token()
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:
        raise WorkbenchError("HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set: unset it to push to the Hub")
    for name in ("httpx", "httpx2", "httpcore"):  # one INFO line per request drowns the summary
        logging.getLogger(name).setLevel(logging.WARNING)

    endpoint = hub_endpoint()
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private or make_private)
        tags = {t.name for t in api.list_repo_refs(repo_id, repo_type="dataset").tags}
        if summary.version in tags:
            raise WorkbenchError(f"{repo_id} already has tag {summary.version}; choose a new --version")
        is_private = _checked_visibility(api, repo_id, private or make_private, make_private)
        commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=summary.out,
                                   commit_message=f"AOR-Bench release {summary.version}",
                                   delete_patterns=[f"{folder}/*" for folder in RELEASE_FOLDERS])
        api.create_tag(repo_id, tag=summary.version, revision=commit.oid, repo_type="dataset",
                       tag_message=f"AOR-Bench release {summary.version}")
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise WorkbenchError(f"{endpoint} rejected HF_TOKEN (401 Unauthorized); "
                                 "check that it is a valid write token") from None
        if status == 403:
            raise WorkbenchError(f"HF_TOKEN may not write to datasets/{repo_id} on {endpoint} (403)") from None
        raise WorkbenchError(f"push to {endpoint} failed: {_without(str(exc), token)}") from None
    except Exception as exc:  # transport errors (httpx, OSError) and client-side refusals
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("httpx", "huggingface_hub")):
            raise WorkbenchError(f"push to {endpoint} failed: {_without(str(exc), token)}") from None
        raise
    return commit.oid, is_private


def _checked_visibility(api, repo_id: str, private: bool, make_private: bool) -> bool:
    """Whether the repo is private, after making it so when asked; a private release is never pushed into
    a public repo (create_repo leaves an existing repo's visibility as it is)."""
    is_private = bool(api.repo_info(repo_id, repo_type="dataset").private)
    if private and not is_private:
        if not make_private:
            raise WorkbenchError(f"datasets/{repo_id} exists and is public: --private would publish this release "
                                 "publicly. Make the repo private on the Hub, or pass --make-private to change it")
        api.update_repo_settings(repo_id, repo_type="dataset", private=True)
        is_private = bool(api.repo_info(repo_id, repo_type="dataset").private)
        if not is_private:
            raise WorkbenchError(f"datasets/{repo_id} is still public after asking the Hub to make it private; "
                                 "nothing was pushed")
    return is_private


def _without(text: str, token: str) -> str:
    return text.replace(token, "***")
