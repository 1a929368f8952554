"""The workspace side of annotation, apart from any server call: what push writes and pull reads.

Workspace state lives in <W>/annotation.json: the arms' title, each arm project's id/title/url, the
adjudication project, the per-workspace salt of the annotator pseudonyms and the secret of the task
keys, when push last found each arm's labelling config intact (and when it was not), the pseudonyms of
the scripted demo accounts; <W>/annotation_tasks.json maps each task key to its item and arm. No token
or email is ever written there, and the server's document root must hold neither file.

Also here: the pseudonyms, what a task holds and which audio may be served, and how an exported
annotation becomes a pseudonymous Annotation. The calls to Label Studio are annotation.labelstudio.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from annotation.protocol import TASKS_FILE, WORDS, ArmSpec, Item
from annotation.server import STATE_FILE
from construction.core.errors import WorkbenchError
from construction.core.record import Annotation, AudioRef
from construction.core.workspace import Workspace, atomic_write_text, sha256_file

INPUT_STAGE = "wer"  # the samples that passed the WER filter are what humans label
OUTPUT_STAGE = "annotated"  # every wer sample with its annotations of all three arms
CONTROLS_OUTPUT_STAGE = "annotated_controls"  # the controls with their mixture-arm annotations
DANGER_OUTPUT_STAGE = "annotated_danger"  # the samples with a danger twin, with their danger scene's scene-arm labels
IRRELEVANT_OUTPUT_STAGE = "annotated_irrelevant"  # the same for the irrelevant twin's background
# pull's manifest of each kind of scene-arm catch item (annotation.protocol.OTHER_SCENES)
OTHER_OUTPUT_STAGES = {"danger": DANGER_OUTPUT_STAGE, "irrelevant": IRRELEVANT_OUTPUT_STAGE}
DEMO_EMAIL_DOMAIN = "demo.aor-bench.invalid"  # scripted demo accounts; .invalid can never be a real mailbox
SOURCE_LABEL_STUDIO = "label-studio"
SOURCE_DEMO = "demo"
ADJUDICATION_SOURCE = "adjudication"  # validation.agreement stores the adjudicator's decision this way
SHOWN_PROBLEMS = 20


# ----------------------------------------------------------------------------------------------
# workspace state
# ----------------------------------------------------------------------------------------------

def open_workspace(path: str | Path) -> Workspace:
    root = Path(path).expanduser()
    if not root.is_dir():
        raise WorkbenchError(f"workspace {root} does not exist")
    return Workspace(root)


def read_json_object(path: Path, remedy: str) -> dict[str, Any]:
    """The JSON object in `path`, {} when there is none; a clear error saying `remedy` when it is not one."""
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise WorkbenchError(f"{path} is not valid JSON ({e.msg}); {remedy}") from e
    if not isinstance(found, dict):
        raise WorkbenchError(f"{path} does not hold a JSON object; {remedy}")
    return found


def read_state(ws: Workspace) -> dict[str, Any]:
    return read_json_object(ws.root / STATE_FILE, "fix or delete it")


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


def record_demo_annotators(ws: Workspace, emails: Sequence[str]) -> None:
    """Mark these accounts as scripted demo annotators, on the workspace side (as pseudonyms): anyone
    can sign up with an address of the demo domain, so pull never goes by the address."""
    with ws.lock():
        state = read_state(ws)
        salt = pseudonym_salt(state)
        known = set(state.get("demo_annotators") or [])
        wanted = sorted(known | {pseudonym(e, salt) for e in emails})
        if wanted != state.get("demo_annotators"):
            state["demo_annotators"] = wanted
            write_state(ws, state)


def demo_annotators(state: dict[str, Any]) -> frozenset[str]:
    return frozenset(state.get("demo_annotators") or [])


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat()


def note_config(entry: dict[str, Any], edited: bool, now: str) -> bool:
    """Keep in an arm's state entry the time windows in which its labelling config may have been edited
    (a label made then may mean another answer): one opens, from the last time push verified the config,
    when the config is found edited, and closes when it is found as push set it again. -> changed?"""
    windows = entry.setdefault("config_edited", [])
    is_open = bool(windows) and windows[-1][1] is None
    if edited and not is_open:
        windows.append([entry.get("config_ok_at", ""), None])
        return True
    if not edited and is_open:
        windows[-1][1] = now
        return True
    return False


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def made_while_edited(updated_at: str, windows: Sequence[Sequence[str | None]]) -> bool:
    """Whether an annotation last changed at updated_at (Label Studio's UTC time) falls in a window of
    note_config ("" from: since ever; None to: still open)."""
    if not windows:
        return False
    when = _instant(updated_at) if updated_at else None
    for start, end in windows:
        if when is None or ((not start or when > _instant(start)) and (end is None or when <= _instant(end))):
            return True
    return False


def default_project_title(ws: Workspace, state: dict[str, Any] | None = None) -> str:
    """'AOR-Bench <6 hex of the workspace's random id>': every annotator sees a project's title, and a folder's
    name (the old title) can tell them whose build, or what, it is; the id still tells workspaces apart on a
    shared server. A workspace with no id yet gets one in `state` (its state as the caller read it), which the
    push that makes the project writes (annotation.push.record_keys); nothing is written here, so a refused
    command changes nothing."""
    from annotation.ownership import new_workspace_id

    return f"AOR-Bench {new_workspace_id(read_state(ws) if state is None else state)[:6]}"


# ----------------------------------------------------------------------------------------------
# tasks and their audio
# ----------------------------------------------------------------------------------------------

def local_file_url(path: Path, document_root: Path) -> str:
    rel = path.resolve().relative_to(document_root).as_posix()
    return "/data/local-files/?d=" + urllib.parse.quote(rel, safe="/")


def plays_audio(url: Any, audio: AudioRef | None) -> bool:
    """Whether a task's data.audio is a local-files URL of that stored audio file (the URL push sends for
    it, whatever the server's document root): the store names a file by its content hash."""
    if audio is None or not isinstance(url, str):
        return False
    parts = urllib.parse.urlsplit(url)
    served = urllib.parse.parse_qs(parts.query).get("d", [""])
    stored = audio.path.removeprefix("audio/")
    return (not parts.scheme and not parts.netloc and parts.path == "/data/local-files/" and len(served) == 1
            and (served[0] == stored or served[0].endswith("/" + stored)))


def salt_problem(ws: Workspace, document_root: Path, flags: str | None = None) -> str:
    """Why the server must not get tasks of this workspace: its document root holds the workspace's
    annotation.json (the pseudonym salt and the task key secret) or its task key map, so any annotator
    could read them. "" when it does not. `flags`: what picks the server in a command (None: --url)."""
    for state_file in (ws.root / STATE_FILE, ws.root / TASKS_FILE):
        if state_file.resolve().is_relative_to(document_root):
            fix = ("pass the server's own --document-root (a dir of audio only)" if flags is None else
                   "restart the server to serve only this workspace's audio: python -m annotation.server "
                   f"stop{flags}, then python -m annotation.server start{flags}")
            return (f"the server's document root {document_root} holds {state_file}, and every annotator could "
                    f"read its pseudonym salt and task keys through /data/local-files/; {fix}")
    return ""


# what listeners certify but no release ships (the twins' backgrounds alone, so no export reads them): their
# bytes are checked at each push.
# The rest is checked where it ships (release.checks), and hashing every clip each push would cost minutes.
VERIFIED_AT_PUSH = ("danger", "irrelevant")


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
        elif item.kind in VERIFIED_AT_PUSH and sha256_file(path) != item.audio.sha256:
            problems.append(f"{where}: its file {item.audio.path} is not the audio its record names (changed since "
                            "it was made); mix it again (python -m construction.mix)")
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
    not_counted: str = ""  # why the annotation is left out entirely ("" when it counts)

    @property
    def reattributed(self) -> bool:
        return self.annotation.updated_by is not None


def user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    try:
        return int(completed_by)
    except (TypeError, ValueError):
        return None


def _person(user_id: int | None, emails: dict[int, str], salt: str) -> tuple[str, bool]:
    """-> (pseudonym, still a user)."""
    email = emails.get(user_id) if user_id is not None else None
    if email:
        return pseudonym(email, salt), True
    return pseudonym(f"user-id:{user_id}", salt), False


def malformed_result(raw: dict[str, Any]) -> str:
    """Why an exported annotation is not of the shape the labelling interface writes ("" when it is).
    The API stores any JSON an annotator sends (a `value` that is a list, a rationale that is a number)."""
    result = raw.get("result")
    if result is None:
        result = []
    if not isinstance(result, list):
        return f"its result is {type(result).__name__}, not a list"
    for item in result:
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(value, dict):
            return f"a result item {json.dumps(item)[:80]} has no object 'value'"
        for name in ("choices", "text"):
            if name in value and not (isinstance(value[name], list) and all(isinstance(v, str) for v in value[name])):
                return f"{item.get('from_name')!r} {name} is {json.dumps(value[name])[:80]}, not a list of texts"
    lead = raw.get("lead_time")
    if lead is not None and (isinstance(lead, bool) or not isinstance(lead, int | float)):
        return f"its lead time is {json.dumps(lead)[:80]}, not a number"
    return ""


def parse_annotation(raw: dict[str, Any], where: str, emails: dict[int, str], salt: str, spec: ArmSpec,
                     demo: frozenset[str] = frozenset()) -> Parsed:
    """One exported annotation -> Annotation (pseudonymous), credited to whoever made its last change.

    Label Studio sets `updated_by` itself, to the account that sent the request, at every create and
    update through the API; `completed_by` is whatever the creator sent (any user can create an
    annotation in someone else's name) and an import writes both as given, leaving `updated_by` empty.
    So the credit goes to `updated_by`, and an annotation without one (imported, or its maker's account
    deleted) is not counted. Malformed results are not counted either; values outside the config are
    kept as given and reported: the API accepts any result, the UI does not. `demo`: the pseudonyms the
    workspace recorded as its scripted demo accounts."""
    problems: list[str] = []
    not_counted = malformed_result(raw)
    author_id = user_id(raw.get("completed_by"))
    maker_id = user_id(raw.get("updated_by"))
    if maker_id is None and not not_counted:
        not_counted = (f"Label Studio records nobody who made it (completed_by {author_id} is what its creator "
                       "sent: imported, or its maker's account was deleted)")
    if not_counted:
        raw = {**raw, "result": [], "lead_time": None}  # kept only to say what was left out
    author, _ = _person(author_id, emails, salt)
    annotator, known = _person(maker_id if maker_id is not None else author_id, emails, salt)
    updated_by = annotator if maker_id is not None and maker_id != author_id else None
    source = SOURCE_DEMO if annotator in demo else SOURCE_LABEL_STUDIO
    if not known and not not_counted:
        problems.append(f"{where}: annotator (user {maker_id}) is not a user of this server any more")
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
    if not_counted:
        problems.append(f"{where}: not counted: {not_counted}")
    elif cancelled:
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
    return Parsed(annotation, created_at, updated_at, int(raw.get("id") or 0), author, problems, not_counted)


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
