"""Label Studio client code shared by push, pull, invite, the demo annotators and adjudication.

Talks to a real Label Studio 1.23.x through label-studio-sdk 2.1.x. Every server failure becomes a
WorkbenchError naming the server and what was being done, mapped by HTTP status code (some endpoints
answer 404 with a 30 kB HTML page, so response bodies are only ever shown as a short JSON detail) and
never showing the token. The SDK is imported lazily: it costs 2-4 s.

Workspace state lives in <W>/annotation.json: the arms' title, each arm project's id/title/url, the
adjudication project, the per-workspace salt of the annotator pseudonyms and the secret of the task
keys; <W>/annotation_tasks.json maps each task key to its item and arm. No token or email is ever
written there, and the server's document root must hold neither file.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from annotation.protocol import TASKS_FILE, WORDS, ArmSpec, Item, config_labels
from annotation.server import STATE_FILE, api_token, default_data_dir, read_server_info
from construction.errors import WorkbenchError
from construction.record import Annotation, AudioRef
from construction.workspace import Workspace, atomic_write_text

INPUT_STAGE = "wer"  # the samples that passed the WER filter are what humans label
OUTPUT_STAGE = "annotated"  # every wer sample with its annotations of all three arms
CONTROLS_OUTPUT_STAGE = "annotated_controls"  # the controls with their mixture-arm annotations
DEMO_EMAIL_DOMAIN = "demo.aor-bench.invalid"  # scripted demo accounts; .invalid can never be a real mailbox
SOURCE_LABEL_STUDIO = "label-studio"
SOURCE_DEMO = "demo"
ADJUDICATION_SOURCE = "adjudication"  # validation.agreement stores the adjudicator's decision this way
IMPORT_CHUNK = 1000  # tasks per import request: a failure loses at most one chunk, a rerun resumes
SHOWN_PROBLEMS = 20

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

    def log_hint(self) -> str:
        if self.data_dir is None:
            return "see the server's log"
        return f"see its log {self.data_dir / 'label-studio.log'}"

    @contextlib.contextmanager
    def errors(self, what: str, not_found: str = "") -> Iterator[None]:
        """Turn SDK/HTTP failures inside the block into a WorkbenchError about `what`."""
        with server_errors(self.url, what, not_found, self.log_hint()):
            yield


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
def server_errors(url: str, what: str, not_found: str = "", log_hint: str = "see the server's log") -> Iterator[None]:
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
    except httpx.TransportError as e:
        raise WorkbenchError(
            f"cannot reach Label Studio at {url} while {what} ({e}); is it running? "
            "Start it with: python -m annotation.server start") from e
    except json.JSONDecodeError as e:
        raise WorkbenchError(f"Label Studio at {url} sent a response that is not JSON while {what}") from e


def make_client(url: str, token: str, timeout_s: float = 300.0) -> Any:
    """An SDK client without retries (a retried import could duplicate tasks) that ignores proxy
    variables (the server is on loopback)."""
    from label_studio_sdk import LabelStudio

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the output
    http = httpx.Client(trust_env=False, timeout=timeout_s, follow_redirects=True)
    return LabelStudio(base_url=url, api_key=token, timeout=timeout_s, max_retries=0, httpx_client=http)


def connect(url: str | None = None, data_dir: str | Path | None = None, document_root: str | Path | None = None,
            token: str | None = None, timeout_s: float = 300.0) -> Server:
    """Connect as the admin and check the token. url wins; else the server started for data_dir."""
    resolved_dir: Path | None = None
    if url:
        url = url.rstrip("/")
        root = Path(document_root or "/")
    else:
        resolved_dir = Path(data_dir or default_data_dir()).expanduser().resolve()
        info = read_server_info(resolved_dir)
        if info is None:
            raise WorkbenchError(
                f"no Label Studio was started for data dir {resolved_dir}; start it with: "
                f"python -m annotation.server start --data-dir {resolved_dir} (or pass --url)")
        url = info.url
        root = Path(document_root or info.document_root)
    server = Server(url=url, document_root=root.expanduser().resolve(), data_dir=resolved_dir,
                    client=make_client(url, token or api_token(), timeout_s))
    with server.errors("checking the API token"):
        server.client.users.whoami()
    return server


def add_server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data dir of the server started by python -m annotation.server (default: its default)")
    parser.add_argument("--url", default=os.environ.get("LABEL_STUDIO_URL"),
                        help="Label Studio URL instead of the data dir's server (env LABEL_STUDIO_URL)")
    parser.add_argument("--document-root", type=Path, default=None,
                        help="the server's LOCAL_FILES_DOCUMENT_ROOT (default: recorded at start; "
                             "with --url, taken to be /, which push refuses)")


def connect_from_args(args: argparse.Namespace) -> Server:
    return connect(args.url, args.data_dir, args.document_root)


# ----------------------------------------------------------------------------------------------
# workspace state
# ----------------------------------------------------------------------------------------------

def open_workspace(path: str | Path) -> Workspace:
    root = Path(path).expanduser()
    if not root.is_dir():
        raise WorkbenchError(f"workspace {root} does not exist")
    return Workspace(root)


def read_state(ws: Workspace) -> dict[str, Any]:
    path = ws.root / STATE_FILE
    if not path.exists():
        return {}
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise WorkbenchError(f"{path} is not valid JSON ({e.msg}); fix or delete it") from e
    if not isinstance(state, dict):
        raise WorkbenchError(f"{path} does not hold a JSON object; fix or delete it")
    return state


def write_state(ws: Workspace, state: dict[str, Any]) -> None:
    atomic_write_text(ws.root / STATE_FILE, json.dumps(state, indent=2, sort_keys=True) + "\n")


def pseudonym_salt(state: dict[str, Any]) -> str:
    """The workspace's salt, created on first use (the caller writes the state)."""
    if not state.get("pseudonym_salt"):
        state["pseudonym_salt"] = secrets.token_hex(16)
    return state["pseudonym_salt"]


def pseudonym(email: str, salt: str) -> str:
    """Stable per workspace, not reversible without the salt: 'ann-' + 10 hex of HMAC-SHA256(salt, email)."""
    digest = hmac.new(salt.encode(), email.strip().lower().encode(), hashlib.sha256).hexdigest()
    return "ann-" + digest[:10]


def is_demo_email(email: str) -> bool:
    return email.strip().lower().endswith("@" + DEMO_EMAIL_DOMAIN)


def default_project_title(ws: Workspace) -> str:
    return f"AOR-Bench {ws.root.name}"


# ----------------------------------------------------------------------------------------------
# projects, storage, tasks
# ----------------------------------------------------------------------------------------------

def find_project(server: Server, title: str) -> Any | None:
    with server.errors(f"looking for project {title!r}"):
        # list(title=...) is a case-insensitive substring filter: compare exactly.
        for project in server.client.projects.list(title=title):
            if project.title == title:
                return project
    return None


def get_project(server: Server, project_id: int, title: str = "") -> Any:
    name = f"project {project_id}" + (f" ({title!r})" if title else "")
    with server.errors(f"reading {name}", not_found=f"{name} no longer exists there (deleted?); "
                       "push again to recreate it"):
        project = server.client.projects.get(project_id)
    if title and project.title != title:
        raise WorkbenchError(f"{name} at {server.url} is now titled {project.title!r}; the server was reset "
                             "or the project renamed: pass --project TITLE")
    return project


def resolve_project(server: Server, state_entry: dict[str, Any] | None, title: str | None, what: str) -> Any:
    """--project TITLE wins (exact title); else the project recorded at push time."""
    if title:
        project = find_project(server, title)
        if project is None:
            raise WorkbenchError(f"no project titled {title!r} at {server.url}; push first")
        return project
    if not state_entry or "id" not in state_entry:
        raise WorkbenchError(f"no {what} recorded in this workspace; push first, or pass --project TITLE")
    return get_project(server, int(state_entry["id"]), state_entry.get("title", ""))


def ensure_project(server: Server, title: str, spec: ArmSpec, overlap: int | None) -> tuple[Any, bool, list[str]]:
    """Find the project by exact title or create it with the role's labelling config, instructions and
    the blind settings. -> (project, created, settings reset). An existing project must ask the same
    question (its stored choices); its settings are reset to the blind ones, and it gets the overlap when
    one is given and differs."""
    if len(title.strip()) < 3:
        raise WorkbenchError(f"project title {title!r} is too short (Label Studio needs 3+ characters)")
    project = find_project(server, title)
    if project is None:
        with server.errors(f"creating project {title!r}"):
            project = server.client.projects.create(
                title=title, label_config=spec.label_config(), expert_instruction=spec.instructions(),
                maximum_annotations=overlap or 3,  # N annotators per task, for every task (cohort 100 %)
                **BLIND_SETTINGS)
        ensure_blind_view(server, project.id)
        return project, True, []
    check_config(server, project, spec)
    update: dict[str, Any] = {k: v for k, v in BLIND_SETTINGS.items() if getattr(project, k, v) != v}
    reset = sorted(update)
    if (project.expert_instruction or "") != spec.instructions():
        update["expert_instruction"] = spec.instructions()
    if overlap is not None and project.maximum_annotations != overlap:
        update.update(maximum_annotations=overlap, overlap_cohort_percentage=100)
    if update:
        with server.errors(f"updating project {title!r}"):
            project = server.client.projects.update(project.id, **update)
    ensure_blind_view(server, project.id)
    return project, False, reset


def check_config(server: Server, project: Any, spec: ArmSpec) -> None:
    """An existing project must ask what this role asks (the same stored choices, the votes or not)."""
    config = project.label_config or ""
    have = config_labels(config)
    if have != list(spec.labels) or "$audio" not in config or ("$votes" in config) != spec.with_votes:
        raise WorkbenchError(f"project {project.title!r} at {server.url} has another labelling config "
                             f"(labels {have}, wanted {list(spec.labels)}"
                             + (", with the votes" if spec.with_votes else "") + "); choose another --project title")


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
        raise WorkbenchError(f"audio dir {audio_dir} is outside the server's document root {server.document_root}; "
                             "start the server with --workspace set to this workspace")
    if audio_dir != server.document_root:
        wanted = [audio_dir]
    elif files is not None:
        wanted = sorted({f.resolve().parent for f in files})
    else:
        wanted = sorted(p for p in audio_dir.iterdir() if p.is_dir() and not p.is_symlink())
    with server.errors(f"setting up local-file storage for {audio_dir}"):
        have = {Path(st.path).resolve() for st in server.client.import_storage.local.list(project=project_id)
                if st.path}
        for path in wanted:
            if path not in have:
                server.client.import_storage.local.create(project=project_id, path=str(path),
                                                          title=f"aor-bench audio {path.name}", use_blob_urls=False)


def local_file_url(path: Path, document_root: Path) -> str:
    rel = path.resolve().relative_to(document_root).as_posix()
    return "/data/local-files/?d=" + urllib.parse.quote(rel, safe="/")


def salt_problem(ws: Workspace, document_root: Path) -> str:
    """Why the server must not get tasks of this workspace: its document root holds the workspace's
    annotation.json (the pseudonym salt and the task key secret) or its task key map, so any annotator
    could read them. "" when it does not."""
    for state_file in (ws.root / STATE_FILE, ws.root / TASKS_FILE):
        if state_file.resolve().is_relative_to(document_root):
            return (f"the server's document root {document_root} holds {state_file}, and every annotator could "
                    f"read its pseudonym salt and task keys through /data/local-files/. Restart the server to serve "
                    f"only this workspace's audio: python -m annotation.server stop, then python -m "
                    f"annotation.server start --workspace {ws.root} (with --url: pass the server's --document-root)")
    return ""


def audio_problems(ws: Workspace, items: Sequence[Item], document_root: Path) -> list[str]:
    """Why items cannot be served to annotators (no audio of that arm recorded, file gone, outside the
    workspace's audio dir or the document root)."""
    store = (ws.root / "audio").resolve()
    problems = []
    for item in items:
        where = f"{item.item_id} ({item.role} arm)"
        if item.audio is None:
            problems.append(f"{where}: no {item.what} audio recorded"
                            + ("; rebuild it with python -m construction.mix" if item.role == "scene" else ""))
            continue
        try:
            path = ws.audio_path(item.audio)
        except WorkbenchError as e:
            problems.append(f"{where}: {e}")
            continue
        if not path.is_file():
            problems.append(f"{where}: audio file {path} is missing")
        elif not path.resolve().is_relative_to(store):
            problems.append(f"{where}: {path} resolves to {path.resolve()}, outside the workspace's audio dir")
        elif not path.resolve().is_relative_to(document_root):
            problems.append(f"{where}: {path} is outside the server's document root {document_root}")
    return problems


def format_problems(problems: Sequence[str], limit: int = SHOWN_PROBLEMS) -> str:
    lines = [f"  {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return "\n".join(lines)


def task_data(ws: Workspace, audio: AudioRef, key: str, document_root: Path) -> dict[str, Any]:
    """A task's data: the audio URL (a content hash: it names nothing) and the opaque key. Nothing else,
    since everything in it shows in the Data Manager and comes back with every task."""
    return {"audio": local_file_url(ws.audio_path(audio), document_root), "key": key}


def label_result(label: str, words: str | None = None) -> list[dict[str, Any]]:
    result = [{"from_name": "label", "to_name": "audio", "type": "choices", "value": {"choices": [label]}}]
    if words is not None:
        result.append({"from_name": "words", "to_name": "audio", "type": "choices", "value": {"choices": [words]}})
    return result


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
                 chunk_size: int = IMPORT_CHUNK) -> list[int]:
    """Bulk JSON import in chunks; returns the new task ids."""
    ids: list[int] = []
    for start in range(0, len(tasks), chunk_size):
        chunk = list(tasks[start:start + chunk_size])
        with server.errors(f"importing tasks {start + 1}-{start + len(chunk)} of {len(tasks)} into project {project_id}",
                           not_found=f"project {project_id} no longer exists (deleted?)"):
            result = server.client.projects.import_tasks(project_id, request=chunk, return_task_ids=True)
        ids.extend(result.task_ids or [])
    return ids


def export_tasks(server: Server, project_id: int) -> list[dict[str, Any]]:
    """All tasks of a project with their annotations (the SDK's JSON export, including unlabelled tasks)."""
    with server.errors(f"exporting project {project_id}",
                       not_found=f"project {project_id} no longer exists (deleted?); push again to recreate it"):
        raw = b"".join(server.client.projects.exports.download_sync(
            project_id, export_type="JSON", download_all_tasks=True))
        tasks = json.loads(raw)
    if not isinstance(tasks, list):
        raise WorkbenchError(f"Label Studio at {server.url} sent an export of project {project_id} that is not a list")
    return tasks


def user_emails(server: Server) -> dict[int, str]:
    with server.errors("listing users"):
        return {u.id: u.email or "" for u in server.client.users.list()}


# ----------------------------------------------------------------------------------------------
# export -> Annotation
# ----------------------------------------------------------------------------------------------

@dataclass
class Parsed:
    annotation: Annotation
    created_at: str
    updated_at: str
    raw_id: int
    author: str  # pseudonym of the Label Studio author (completed_by), who may differ from the credited person
    problems: list[str] = field(default_factory=list)

    @property
    def reattributed(self) -> bool:
        return self.annotation.updated_by is not None


def _user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    try:
        return int(completed_by)
    except (TypeError, ValueError):
        return None


def _person(user_id: int | None, emails: dict[int, str], salt: str) -> tuple[str, str, bool]:
    """-> (pseudonym, source, still a user)."""
    email = emails.get(user_id) if user_id is not None else None
    if email:
        return pseudonym(email, salt), (SOURCE_DEMO if is_demo_email(email) else SOURCE_LABEL_STUDIO), True
    return pseudonym(f"user-id:{user_id}", salt), SOURCE_LABEL_STUDIO, False


def parse_annotation(raw: dict[str, Any], where: str, emails: dict[int, str], salt: str, spec: ArmSpec) -> Parsed:
    """One exported annotation -> Annotation (pseudonymous), credited to whoever made its last change:
    Label Studio lets any user update anyone's annotation (or create one in someone else's name), and
    then the label is the changer's judgement, not the author's. Values outside the config are kept as
    given and reported as problems: the API accepts any result, the UI does not."""
    problems: list[str] = []
    author_id = _user_id(raw.get("completed_by"))
    changer_id = _user_id(raw.get("updated_by"))
    author, author_source, author_known = _person(author_id, emails, salt)
    if changer_id is not None and changer_id != author_id:
        annotator, source, known = _person(changer_id, emails, salt)
        updated_by: str | None = annotator
        user_id = changer_id
    else:
        annotator, source, known, updated_by, user_id = author, author_source, author_known, None, author_id
    if not known:
        problems.append(f"{where}: annotator (user {user_id}) is not a user of this server any more")
    cancelled = bool(raw.get("was_cancelled"))
    label: str | None = None
    words: bool | None = None
    rationale: list[str] = []
    for item in raw.get("result") or []:
        value = item.get("value") or {}
        name = item.get("from_name")
        if name == "label":
            chosen = [str(c) for c in value.get("choices") or []]
            if len(chosen) == 1:
                label = chosen[0]
                if label not in spec.labels:
                    problems.append(f"{where}: label {label!r} is not one of {list(spec.labels)} (kept as given)")
            elif chosen:
                problems.append(f"{where}: several labels {chosen}; recorded no label")
        elif name == "words" and spec.role == "mixture":
            chosen = [str(c) for c in value.get("choices") or []]
            if len(chosen) == 1 and chosen[0] in WORDS:
                words = WORDS[chosen[0]]
            else:
                problems.append(f"{where}: 'I could make out the words' is {chosen}, not one of {list(WORDS)}")
        elif name == "rationale":
            rationale.extend(str(t) for t in value.get("text") or [] if str(t).strip())
    if cancelled:
        label, words = None, None  # a skip carries no judgement, whatever the result says
    else:
        if label is None and not any("several labels" in p for p in problems):
            problems.append(f"{where}: submitted without a label")
        if spec.role == "mixture" and words is None and not any("make out the words" in p for p in problems):
            problems.append(f"{where}: submitted without 'I could make out the words'")
    lead = raw.get("lead_time")
    created_at, updated_at = str(raw.get("created_at") or ""), str(raw.get("updated_at") or raw.get("created_at") or "")
    annotation = Annotation(
        annotator=annotator, label=label, arm=spec.arm, speech_intelligible=words,
        rationale="\n".join(rationale).strip(), lead_time_s=None if lead is None else round(float(lead), 3),
        created_at=created_at, updated_at=updated_at, updated_by=updated_by, cancelled=cancelled, source=source)
    return Parsed(annotation, created_at, updated_at, int(raw.get("id") or 0), author, problems)


def one_per_annotator(parsed: Sequence[Parsed]) -> list[Parsed]:
    """Label Studio lets a user annotate a task twice: keep each person's latest non-cancelled annotation,
    latest by its last change (Update changes updated_at, not created_at), or their latest cancelled one
    when that is all they did. Ordered by that time."""
    chosen: dict[str, Parsed] = {}
    for p in sorted(parsed, key=lambda p: (p.updated_at, p.raw_id)):
        current = chosen.get(p.annotation.annotator)
        if current is None or not p.annotation.cancelled or current.annotation.cancelled:
            chosen[p.annotation.annotator] = p
    return sorted(chosen.values(), key=lambda p: (p.updated_at, p.raw_id))


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
