"""Push a written release to the Hugging Face Hub; apart from release.export, which only writes folders.

`huggingface_hub.HfApi` against $HF_ENDPOINT (default the Hub), token only from $HF_TOKEN;
create_repo(exist_ok), a visibility check, gating when asked (--gated auto|manual:
update_repo_settings(gated=...), set and read back before any file goes up, so the release is never
readable ungated), upload_folder + a tag named after the version. The commit
deletes what an earlier version left under the release's own folders (data/, controls/, plots/), so the
repo and its tag hold exactly the pushed release. create_repo ignores `private` for a repo that exists:
a private push into a public repo is refused unless --make-private asks to change the repo. A release
whose labels came from scripted demo annotators (annotation source "demo") is never pushed to a real Hub;
an endpoint on loopback (HF_ENDPOINT=http://127.0.0.1:PORT, such as `python -m tests.hub_stub`) is a
rehearsal, and takes it.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import textwrap
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from construction.core.errors import WorkbenchError
from construction.core.redact import redact, url_password

if TYPE_CHECKING:
    from release.inputs import ReleaseSummary

# the folders a release writes whole: remote files under them that the new release lacks are deleted
RELEASE_FOLDERS = ("data", "controls", "plots")


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def shown_endpoint() -> str:
    """$HF_ENDPOINT as it may be printed: a user:password@ inside it masked."""
    endpoint = hub_endpoint()
    return redact(endpoint, [url_password(endpoint)])


def hub_token() -> str:
    token = os.environ.get("HF_TOKEN", "").strip()
    if not token:
        raise WorkbenchError("HF_TOKEN is not set: export a Hugging Face write token as HF_TOKEN to push "
                             "(the token is read only from the environment)")
    return token


def is_loopback(endpoint: str) -> bool:
    """Whether the endpoint is on this machine (localhost, 127.0.0.0/8, ::1): a rehearsal, not the Hub."""
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def demo_refusal() -> WorkbenchError:
    return WorkbenchError(
        f"the validated labels come from scripted demo annotators: a demo release is never pushed to "
        f"{shown_endpoint()}. Rehearse instead: add --dry-run to see what would go where, or push to a local "
        "Hub-compatible endpoint (start one with `python -m tests.hub_stub --port 8020`, then set "
        "HF_ENDPOINT=http://127.0.0.1:8020)")


GATED = ("auto", "manual")  # the Hub's gating modes: requests approved automatically, or by the repo's owners


def describe_push(summary: ReleaseSummary, repo_id: str, private: bool, make_private: bool = False,
                  gated: str | None = None) -> str:
    endpoint = shown_endpoint()
    visibility = ("private; an existing public repo is made private" if make_private else
                  "private; refused if the repo exists and is public" if private else
                  "public unless the repo exists and is private")
    lines = [f"dry run: nothing sent. Would push {summary.out} to {endpoint}"
             + (" (on this machine: a rehearsal)" if is_loopback(hub_endpoint()) else ""),
             f"  repo: datasets/{repo_id} ({visibility}; created if missing)",
             (f"  gated: {gated} (access requests approved "
              + ("automatically" if gated == "auto" else "by the repo's owners") + "; set before any file goes up)"
              if gated else "  gated: left as the repo has it (a new repo is not gated; --gated auto|manual sets it)"),
             f"  tag:  {summary.version}",
             f"  deletes: files under {', '.join(f + '/' for f in RELEASE_FOLDERS)} that this release lacks",
             f"  files: {len(summary.files)}, {summary.total_bytes / 1e6:.2f} MB"]
    lines += [f"    {size:>12,d}  {rel}" for rel, size in summary.files.items()]
    lines.append(f"  HF_TOKEN is {'set' if os.environ.get('HF_TOKEN') else 'NOT set (a real push needs it)'}")
    if summary.demo:
        lines.append("  DEMO release (scripted labels): a real push " + (
            "to this local endpoint is allowed (a rehearsal)" if is_loopback(hub_endpoint()) else
            f"to {endpoint} is refused; HF_ENDPOINT=http://127.0.0.1:PORT (python -m tests.hub_stub) takes it"))
    lines += ["  card header (README.md):", *("    " + line for line in card_header(summary.out / "README.md"))]
    return "\n".join(lines)


def card_header(card) -> list[str]:
    """The card's YAML front matter, its long dataset_info (the features) cut to one line, and its title."""
    import yaml

    from construction.core.yamlfile import load_yaml

    text = card.read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    meta = load_yaml(front)
    info = meta.pop("dataset_info", None)
    lines = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).splitlines()
    if info is not None:
        names = [entry.get("config_name", "default") for entry in (info if isinstance(info, list) else [info])]
        lines.append(f"dataset_info: features of {', '.join(names)} (in the card)")
    title = next((line for line in body.splitlines() if line.startswith("# ")), "")
    banners = [textwrap.shorten(line, 120, placeholder=" ...") for line in body.splitlines()
               if line.startswith(("> **Content warning", "> **DEMO"))]
    return ["---", *lines, "---", *banners, *([title] if title else [])]


def push_release(summary: ReleaseSummary, repo_id: str, private: bool = False,
                 make_private: bool = False, gated: str | None = None) -> tuple[str, bool]:
    """create_repo + visibility check + gating + upload_folder + create_tag; returns the tagged commit id and
    whether the repo is private. `make_private` turns an existing public repo private first; `gated`
    ("auto" | "manual") gates the repo before anything is uploaded (None: its gating is left as it is)."""
    if gated is not None and gated not in GATED:
        raise WorkbenchError(f"--gated wants one of {', '.join(GATED)}, got '{gated}'")
    if summary.demo and not is_loopback(hub_endpoint()):
        raise demo_refusal()
    token = hub_token()
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:
        raise WorkbenchError("HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set: unset it to push to the Hub")
    for name in ("httpx", "httpx2", "httpcore"):  # one INFO line per request drowns the summary
        logging.getLogger(name).setLevel(logging.WARNING)

    endpoint, shown = hub_endpoint(), shown_endpoint()
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private or make_private)
        tags = {t.name for t in api.list_repo_refs(repo_id, repo_type="dataset").tags}
        if summary.version in tags:
            raise WorkbenchError(f"{repo_id} already has tag {summary.version}; choose a new --version")
        is_private = _checked_visibility(api, repo_id, private or make_private, make_private)
        if gated:
            _gate(api, repo_id, gated)
        commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=summary.out,
                                   commit_message=f"AOR-Bench release {summary.version}",
                                   delete_patterns=[f"{folder}/*" for folder in RELEASE_FOLDERS])
        api.create_tag(repo_id, tag=summary.version, revision=commit.oid, repo_type="dataset",
                       tag_message=f"AOR-Bench release {summary.version}")
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise WorkbenchError(f"{shown} rejected HF_TOKEN (401 Unauthorized); "
                                 "check that it is a valid write token") from None
        if status == 403:
            raise WorkbenchError(f"HF_TOKEN may not write to datasets/{repo_id} on {shown} (403)") from None
        raise WorkbenchError(f"push to {shown} failed: {_without(str(exc), token)}") from None
    except Exception as exc:  # transport errors (httpx, OSError) and client-side refusals
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("httpx", "huggingface_hub")):
            raise WorkbenchError(f"push to {shown} failed: {_without(str(exc), token)}") from None
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


def _gate(api, repo_id: str, gated: str) -> None:
    """Gate the repo and read the setting back: a Hub that did not take it gets no files."""
    api.update_repo_settings(repo_id, repo_type="dataset", gated=gated)
    now = api.repo_info(repo_id, repo_type="dataset").gated
    if now != gated:
        raise WorkbenchError(f"datasets/{repo_id} reports gated={now!r} after asking for gated={gated!r}; "
                             "nothing was pushed")


def _without(text: str, token: str) -> str:
    return text.replace(token, "***")
