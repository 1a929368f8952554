"""Label Studio client code shared by push, pull, invite, the demo annotators and adjudication.

Talks to a real Label Studio 1.23.x through label-studio-sdk 2.1.x. Every server failure becomes a
WorkbenchError naming the server and what was being done, never showing the token (the client and the
mapping: annotation.ls_client). The SDK is imported lazily: it costs 2-4 s.

The workspace side (annotation.json, pseudonyms, task data, export -> Annotation) is
annotation.state; this module holds only what talks to the server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from annotation.ls_client import make_client, server_errors  # noqa: F401 (importable from here, as before)
from annotation.ls_process import api_token
from annotation.ownership import check_owner, check_server_owner, marked_owner, with_mark
from annotation.protocol import ArmSpec, config_changed, config_labels
from annotation.server import (
    DATA_DIR_NAME,
    DEFAULT_WORKSPACE,
    add_data_dir,
    own_server_command,
    read_server_info,
    resolve_data_dir,
    server_command,
    server_flags,
)
from construction.core.errors import WorkbenchError

IMPORT_CHUNK = 1000  # tasks per import request: a failure loses at most one chunk, a rerun resumes

# What every project of the protocol is set to (and reset to by each push): tasks in random order per
# annotator, N annotators each, no predictions, no history, an instructions page, no empty submission.
BLIND_SETTINGS: dict[str, Any] = {
    "sampling": "Uniform sampling",
    "overlap_cohort_percentage": 100,
    "show_collab_predictions": False,
    "reveal_preannotations_interactively": False,
    "evaluate_predictions_automatically": False,
    "show_annotation_history": False,
    "show_overlap_first": False,
    "show_ground_truth_first": False,
    "show_instruction": True,
    "show_skip_button": True,
    "enable_empty_annotation": False,
}
# The Data Manager tab every project gets: only the task id, the audio and the key are shown. Shared by
# every user of the project and anyone may show the other columns again (Label Studio Community).
VIEW_TITLE = "Tasks"
VISIBLE_COLUMNS = ("tasks:id", "tasks:data.audio", "tasks:data.key")
HIDDEN_COLUMNS = tuple(f"tasks:{c}" for c in (
    "inner_id", "completed_at", "total_annotations", "cancelled_annotations", "total_predictions", "annotators",
    "annotations_results", "annotations_ids", "predictions_score", "predictions_model_versions",
    "predictions_results", "file_upload", "storage_filename", "created_at", "updated_at", "updated_by",
    "avg_lead_time", "draft_exists", "comment_count", "last_comment_updated_at", "unresolved_comment_count",
    "comment_authors", "reviewers", "reviews_accepted", "reviews_rejected", "ground_truth", "agreement"))


# ----------------------------------------------------------------------------------------------
# connection and error mapping
# ----------------------------------------------------------------------------------------------

@dataclass
class Server:
    url: str
    document_root: Path
    data_dir: Path | None  # None when given by --url (then its log location is unknown)
    client: Any  # label_studio_sdk.LabelStudio
    flags: str = ""  # what picks this server again in a hint: ' --workspace W', ' --data-dir D', ' --url U'
    workspace: Path | None = None  # the workspace the command works for, as given

    def log_hint(self) -> str:
        if self.data_dir is None:
            return "see the server's log"
        return f"see its log {self.data_dir / 'label-studio.log'}"

    def start_hint(self) -> str:
        """What to do when the server cannot be reached: a complete command."""
        if self.data_dir is None:  # given by --url: that may be any server
            ws = self.flags.split(" --url ")[0]
            return ("Check --url (or LABEL_STUDIO_URL), or leave it out and start this workspace's own server: "
                    f"python -m annotation.server start{ws}")
        return f"Start it with: python -m annotation.server start{self.flags}"

    def command(self, module: str, *args: str) -> str:
        """A complete command of another module for the same workspace and server, e.g. the invite."""
        return " ".join(("python -m", module, *args)) + self.flags

    @contextlib.contextmanager
    def errors(self, what: str, not_found: str = "") -> Iterator[None]:
        """Turn SDK/HTTP failures inside the block into a WorkbenchError about `what`."""
        with server_errors(self.url, what, not_found, self.log_hint(), self.start_hint()):
            yield


def connect(url: str | None = None, data_dir: str | Path | None = None, document_root: str | Path | None = None,
            token: str | None = None, timeout_s: float = 300.0, workspace: str | Path = DEFAULT_WORKSPACE,
            owned: bool = False) -> Server:
    """Connect as the admin and check the token. url wins; else the server started for the data dir
    (data_dir > $AOR_LABEL_STUDIO_DATA_DIR > <workspace>/label-studio). `owned`: for a command working
    on the workspace's projects, a server started for another workspace is refused (annotation.ownership)."""
    resolved_dir: Path | None = None
    if url:
        url = url.rstrip("/")
        root = Path(document_root or "/")
        flags = server_flags(workspace) + f" --url {url}"
    else:
        resolved_dir = resolve_data_dir(data_dir, workspace)
        flags = server_flags(workspace, data_dir)
        info = read_server_info(resolved_dir)
        if info is None:
            raise WorkbenchError(
                f"no Label Studio was started for data dir {resolved_dir}; start it with: "
                f"{server_command('start', workspace, data_dir)} (or pass --url)")
        if owned:
            check_server_owner(info, Path(workspace).expanduser().resolve(), own_server_command(workspace))
        url = info.url
        root = Path(document_root or info.document_root)
    server = Server(url=url, document_root=root.expanduser().resolve(), data_dir=resolved_dir,
                    client=make_client(url, token or api_token(), timeout_s), flags=flags,
                    workspace=Path(workspace))
    with server.errors("checking the API token"):
        server.client.users.whoami()
    return server


# what a command that talks to Label Studio reads: where (URL, data folder) and as whom (the admin's token;
# ls_process.admin_credentials reads the account beside it)
SERVER_ENV = ("LABEL_STUDIO_URL", "AOR_LABEL_STUDIO_DATA_DIR", "LABEL_STUDIO_API_KEY", "LABEL_STUDIO_ADMIN_EMAIL",
              "LABEL_STUDIO_ADMIN_PASSWORD")


def add_server_args(parser: argparse.ArgumentParser, *, workspace: bool = False) -> None:
    """Which Label Studio: --url, else the one python -m annotation.server started for the data folder; with
    workspace, --workspace too, for a command that has none of its own (it picks <workspace>/label-studio)."""
    group = parser.add_argument_group(
        "Label Studio server", "the admin's API token comes from LABEL_STUDIO_API_KEY (default: the local demo "
        "token); the server is the one python -m annotation.server start started for the data folder")
    if workspace:
        group.add_argument("--workspace", default=DEFAULT_WORKSPACE, metavar="DIR",
                           help=f"the workspace whose Label Studio to use (default: ./{DEFAULT_WORKSPACE})")
    add_data_dir(group)
    group.add_argument("--url", default=os.environ.get("LABEL_STUDIO_URL"),
                       help="Label Studio's URL, for a server annotation.server did not start "
                            "(default: $LABEL_STUDIO_URL, else the data folder's server)")
    group.add_argument("--document-root", type=Path, default=None,
                       help="the server's LOCAL_FILES_DOCUMENT_ROOT (default: recorded at start; "
                            "with --url, taken to be /, which push refuses)")


def connect_from_args(args: argparse.Namespace, owned: bool = True) -> Server:
    """The server of a command's flags; `owned` (the default: a command of a workspace's projects) refuses
    a server started for another workspace."""
    return connect(args.url, args.data_dir, args.document_root,
                   workspace=getattr(args, "workspace", None) or DEFAULT_WORKSPACE, owned=owned)


# ----------------------------------------------------------------------------------------------
# projects, storage, tasks
# ----------------------------------------------------------------------------------------------

def find_project(server: Server, title: str) -> Any | None:
    """The one project of exactly this title; an error when several have it (anyone may make a project
    of any title: a decoy is never chosen by guess)."""
    with server.errors(f"looking for project {title!r}"):
        # list(title=...) is a case-insensitive substring filter: compare exactly.
        found = [p for p in server.client.projects.list(title=title) if p.title == title]
    if len(found) > 1:
        raise WorkbenchError(f"{len(found)} projects at {server.url} are titled {title!r} (ids "
                             f"{', '.join(str(p.id) for p in found)}); rename or delete all but yours, or pass "
                             "another --project title")
    return found[0] if found else None


DELETED_HINT = "it was deleted with its labels; pass another --project title to start again in new projects"


def get_project(server: Server, project_id: int, title: str = "", not_found: str = "") -> Any:
    """The project of that id, whatever it is titled now (anyone may rename a project): a workspace's
    projects are bound by the ids it recorded, never found again by title."""
    name = f"project {project_id}" + (f" ({title!r})" if title else "")
    with server.errors(f"reading {name}", not_found=not_found or f"{name} no longer exists there (deleted?); "
                       "push again to recreate it"):
        return server.client.projects.get(project_id)


def resolve_project(server: Server, state_entry: dict[str, Any] | None, title: str | None, what: str,
                    state: dict[str, Any] | None = None) -> Any:
    """--project TITLE wins (exact title), unless it is the recorded project's; else the project recorded
    at push time, by id. With the workspace's `state`, a project of another workspace is refused."""
    if title and title != (state_entry or {}).get("title"):
        project = find_project(server, title)
        if project is None:
            raise WorkbenchError(f"no project titled {title!r} at {server.url}; push it first: "
                                 f"{server.command('annotation.push', '--project', shlex.quote(title))}")
        state_entry = None
    elif not state_entry or "id" not in state_entry:
        raise WorkbenchError(f"no {what} recorded in this workspace; push first, or pass --project TITLE")
    else:
        project = get_project(server, int(state_entry["id"]), state_entry.get("title", ""))
    if state is not None:
        check_owner(server, project, state, state_entry)
    return project


def ensure_project(server: Server, title: str, spec: ArmSpec, overlap: int | None,
                   project_id: int | None = None) -> tuple[Any, bool, list[str]]:
    """open_project, then reset_project: the project, whether it was created, the settings reset."""
    project, created = open_project(server, title, spec, overlap, project_id)
    if created:
        return project, True, []
    project, reset = reset_project(server, project, title, spec, overlap)
    return project, False, reset


def open_project(server: Server, title: str, spec: ArmSpec, overlap: int | None, project_id: int | None = None,
                 mark: str | None = None, state: dict[str, Any] | None = None,
                 entry: dict[str, Any] | None = None) -> tuple[Any, bool]:
    """The project recorded as project_id, else the one of exactly this title, else a new one with the
    role's labelling config, instructions, the blind settings and the workspace's `mark` (its id,
    annotation.ownership). An existing one is only read here (refused when another workspace's: `state`
    and `entry`, the workspace's state and its entry of the project); reset_project changes it, once the
    push knows it can go on. -> (project, created)."""
    if len(title.strip()) < 3:
        raise WorkbenchError(f"project title {title!r} is too short (Label Studio needs 3+ characters)")
    if project_id is not None:
        project = get_project(server, project_id, title, not_found=DELETED_HINT)
    else:
        project = find_project(server, title)
    if project is not None:
        if state is not None:
            check_owner(server, project, state, entry)
        return project, False
    with server.errors(f"creating project {title!r}"):
        project = server.client.projects.create(
            title=title, label_config=spec.label_config(), expert_instruction=spec.instructions(),
            maximum_annotations=overlap or 3,  # N annotators per task (push.DEFAULT_OVERLAP), cohort 100 %
            **({"description": with_mark(None, mark)} if mark else {}), **BLIND_SETTINGS)
    ensure_blind_view(server, project.id)
    return project, True


def reset_project(server: Server, project: Any, title: str, spec: ArmSpec, overlap: int | None,
                  mark: str | None = None) -> tuple[Any, list[str]]:
    """Set an existing project back to what the role wants: it must ask the same question (its stored
    choices); its title, settings and instructions are reset, it gets the overlap when one is given and
    differs, and the workspace's mark when it lacks it. -> (project, settings reset)."""
    edited = check_config(server, project, spec)
    wanted = {**BLIND_SETTINGS, "title": title, "label_config": spec.label_config() if edited else None}
    update: dict[str, Any] = {k: v for k, v in wanted.items() if v is not None and getattr(project, k, v) != v}
    reset = sorted(update)
    if (project.expert_instruction or "") != spec.instructions():
        update["expert_instruction"] = spec.instructions()
    if overlap is not None and project.maximum_annotations != overlap:
        update.update(maximum_annotations=overlap, overlap_cohort_percentage=100)
    if mark and marked_owner(project) != mark:
        update["description"] = with_mark(project.description, mark)
    if update:
        with server.errors(f"updating project {title!r}"):
            project = server.client.projects.update(project.id, **update)
    ensure_blind_view(server, project.id)
    return project, reset


def check_config(server: Server, project: Any, spec: ArmSpec) -> str:
    """An existing project must ask what this role asks (the same stored choices, the votes or not).
    -> how its choices were edited ("" when they were not): push sets them back."""
    config = project.label_config or ""
    have = config_labels(config)
    if sorted(have) != sorted(spec.labels) or "$audio" not in config or ("$votes" in config) != spec.with_votes:
        raise WorkbenchError(f"project {project.title!r} at {server.url} has another labelling config "
                             f"(labels {have}, wanted {list(spec.labels)}"
                             + (", with the votes" if spec.with_votes else "") + "); choose another --project title")
    return config_changed(config, spec)


def ensure_blind_view(server: Server, project_id: int) -> None:
    """Give the project's Data Manager a tab showing only the task id, the audio and the key (made once;
    Label Studio would otherwise make a default tab showing who annotated each task)."""
    data = {"title": VIEW_TITLE, "type": "list", "target": "tasks", "ordering": ["tasks:id"],
            "hiddenColumns": {"explore": list(HIDDEN_COLUMNS), "labeling": list(HIDDEN_COLUMNS)}}
    with server.errors(f"setting up the Data Manager tab of project {project_id}"):
        views = server.client.views.list(project=project_id)
        if not any((v.data or {}).get("title") == VIEW_TITLE for v in views):
            server.client.views.create(project=project_id, data=data)


def ensure_local_storage(server: Server, project_id: int, audio_dir: Path, files: Sequence[Path] | None = None) -> None:
    """Local-files storages for audio_dir: what grants /data/local-files/ access to the files.

    Label Studio refuses a storage at its document root itself, so when audio_dir is the document
    root (the default) each <sha[:2]> subdirectory gets a storage of its own: those holding files
    when given (paths checked by audio_problems), else all of them (~60 ms each, once)."""
    audio_dir = audio_dir.resolve()
    if not audio_dir.is_relative_to(server.document_root):
        raise WorkbenchError(outside_root(server, audio_dir))
    if audio_dir != server.document_root:
        wanted = [audio_dir]
    elif files is not None:
        wanted = sorted({f.resolve().parent for f in files})
    else:
        wanted = sorted(p for p in audio_dir.iterdir() if p.is_dir() and not p.is_symlink())
    with server.errors(f"setting up local-file storage for {audio_dir}"):
        have = {Path(st.path).resolve() for st in server.client.import_storage.local.list(project=project_id)
                if st.path}
        missing = [path for path in wanted if path not in have]
        # up to 256 of them on a first push (~60 ms each): a bar when there are many
        for path in tqdm(missing, desc=f"granting project {project_id} its audio dirs", unit="dir", file=sys.stderr,
                         disable=len(missing) < 20):
            server.client.import_storage.local.create(project=project_id, path=str(path),
                                                      title=f"aor-bench audio {path.name}", use_blob_urls=False)


def outside_root(server: Server, audio_dir: Path) -> str:
    """Why a workspace's audio cannot be served by this server (it serves another dir), and what to run:
    a restart only of the workspace's own server (its own data dir); any other server may serve another
    workspace, so it is left running and the workspace's own is started beside it."""
    what = f"the audio dir {audio_dir} is outside the server's document root {server.document_root}"
    if server.data_dir is None:
        return f"{what}; pass the server's own --document-root, or start this workspace's server"
    workspace = server.workspace or Path(DEFAULT_WORKSPACE)
    if server.data_dir == (workspace.expanduser() / DATA_DIR_NAME).resolve():
        return (f"{what}; restart this workspace's own server to serve its audio: python -m annotation.server "
                f"stop{server.flags}, then python -m annotation.server start{server.flags}")
    return (f"{what} (that server serves other audio: another workspace's, or a shared folder). Leave it running "
            f"and start this workspace's own server: {own_server_command(workspace)}; then run this again with "
            f"--data-dir {workspace / DATA_DIR_NAME}")


def task_keys(server: Server, project_id: int) -> dict[str, list[int]]:
    """task key -> task ids already in the project (fast: only id and data are sent)."""
    found: dict[str, list[int]] = {}
    with server.errors(f"listing the tasks of project {project_id}",
                       not_found=f"project {project_id} no longer exists (deleted?)"):
        for task in server.client.tasks.list(project=project_id, fields="task_only", include="id,data",
                                             page_size=1000):
            key = (task.data or {}).get("key")
            if key is not None:
                found.setdefault(str(key), []).append(task.id)
    return found


def set_task_overlap(server: Server, task_ids: Sequence[int], overlap: int) -> None:
    with server.errors("setting the overlap of the catch tasks"):
        for task_id in task_ids:
            server.client.tasks.update(str(task_id), overlap=overlap)


def import_tasks(server: Server, project_id: int, tasks: Sequence[dict[str, Any]],
                 chunk_size: int = IMPORT_CHUNK, poll_s: float = 1.0, timeout_s: float = 600.0) -> list[int] | None:
    """Bulk JSON import in chunks; returns the new task ids, or None when the server did not say them.

    Community edition imports at once and answers the ids (`task_ids`, a field the SDK does not declare);
    Enterprise answers {"import": id} and imports in the background: wait until that import is done."""
    ids: list[int] = []
    for start in range(0, len(tasks), chunk_size):
        chunk = list(tasks[start:start + chunk_size])
        what = f"importing tasks {start + 1}-{start + len(chunk)} of {len(tasks)} into project {project_id}"
        with server.errors(what, not_found=f"project {project_id} no longer exists (deleted?)"):
            result = server.client.projects.import_tasks(project_id, request=chunk, return_task_ids=True)
            chunk_ids = getattr(result, "task_ids", None)
            if chunk_ids is None and result.import_ is not None:
                chunk_ids = wait_for_import(server, project_id, result.import_, what, poll_s, timeout_s)
        if chunk_ids is None:
            return None
        ids.extend(int(i) for i in chunk_ids)
    return ids


def wait_for_import(server: Server, project_id: int, import_id: int, what: str, poll_s: float,
                    timeout_s: float) -> list[int] | None:
    """Poll an asynchronous import until it is completed (-> its task ids, when it says them) or failed."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = server.client.tasks.create_many_status(project_id, import_id)
        if status.status == "completed":
            return None if status.task_ids is None else list(status.task_ids)
        if status.status == "failed":
            raise WorkbenchError(f"Label Studio at {server.url} failed {what} (import {import_id}): "
                                 f"{(status.error or 'no reason given')[:300]}")
        if time.monotonic() > deadline:
            raise WorkbenchError(f"Label Studio at {server.url} had not finished {what} (import {import_id}) after "
                                 f"{timeout_s:.0f} s; push again once it has: only missing tasks are imported")
        time.sleep(poll_s)


def export_tasks(server: Server, project_id: int) -> list[dict[str, Any]]:
    """All tasks of a project with their annotations (the SDK's JSON export, including unlabelled tasks)."""
    with server.errors(f"exporting project {project_id}",
                       not_found=f"project {project_id} no longer exists (deleted?); push again to recreate it"):
        raw = b"".join(server.client.projects.exports.download_sync(
            project_id, export_type="JSON", download_all_tasks=True))
        tasks = json.loads(raw)
    if server.data_dir is not None:  # Label Studio keeps a copy of every export ("for logging"): not ours to keep
        for copy in (server.data_dir / "export").glob(f"project-{int(project_id)}-at-*.json"):
            copy.unlink(missing_ok=True)
    if not isinstance(tasks, list):
        raise WorkbenchError(f"Label Studio at {server.url} sent an export of project {project_id} that is not a list")
    return tasks


def user_emails(server: Server) -> dict[int, str]:
    with server.errors("listing users"):
        return {u.id: u.email or "" for u in server.client.users.list()}


# ----------------------------------------------------------------------------------------------
# invites and accounts (the browser's signup and login forms)
# ----------------------------------------------------------------------------------------------

def invite_link(server: Server, reset: bool = False) -> str:
    with server.errors("making an invite link"):
        if reset:
            server.client.organizations.reset_token()
        invite = server.client.organizations.invites.get_invite_link()
    return server.url + invite.invite_url


def _form_post(url: str, path: str, fields: dict[str, str]) -> tuple[int, str | None]:
    """GET a Django form page (CSRF cookie and field), POST it; -> (status, the user's API token or None)."""
    with httpx.Client(base_url=url, trust_env=False, timeout=60) as web:
        with server_errors(url, f"opening {path.split('?')[0]}"):
            page = web.get(path)
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        if page.status_code != 200 or not match:
            return page.status_code, None
        with server_errors(url, f"submitting {path.split('?')[0]}"):
            answer = web.post(path, data={**fields, "csrfmiddlewaretoken": match.group(1)})
            if answer.status_code != 302:  # 200 = form shown again with errors, 403 = no valid invite
                return answer.status_code, None
            token = web.get("/api/current-user/token")
        if token.status_code != 200:
            return token.status_code, None
        return 302, token.json()["token"]


def login(url: str, email: str, password: str) -> str | None:
    """The user's API token via the login form, or None when the credentials are not accepted."""
    return _form_post(url, "/user/login/", {"email": email, "password": password})[1]


def signup_via_invite(url: str, invite: str, email: str, password: str) -> str:
    """Create an account through the invite link, as a new annotator's browser does; -> its API token."""
    path = invite.removeprefix(url)
    status, token = _form_post(url, path, {"email": email, "password": password})
    if token is None:
        why = {403: "the invite link is not valid (reset?)",
               200: "the form was refused (account exists, or password under 8 characters)"}.get(status, "")
        raise WorkbenchError(f"signing up {email} at {url} failed (HTTP {status})" + (f": {why}" if why else ""))
    return token
