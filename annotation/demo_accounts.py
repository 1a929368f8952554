"""DEMO ONLY: the scripted annotators' accounts (annotator-K@demo.aor-bench.invalid, the adjudicator): signed
up through the real invite link or logged in, each kept logged in from run to run (its token in the server's
data dir, SESSIONS_FILE). What they answer is annotation.demo_annotators."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from annotation.labelstudio import Server, invite_link, login, make_client, signup_via_invite, user_emails
from annotation.ls_process import header_safe
from annotation.state import DEMO_EMAIL_DOMAIN
from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_text

ERROR_RATES = (0.05, 0.12, 0.2)  # scripted account K (either demo) errs with ERROR_RATES[(K - 1) % 3]

DEFAULT_PASSWORD = "aor-bench-demo-annotator"  # local demo accounts on a loopback-only server


def demo_email(k: int) -> str:
    return f"annotator-{k}@{DEMO_EMAIL_DOMAIN}"


ADJUDICATOR_EMAIL = f"adjudicator@{DEMO_EMAIL_DOMAIN}"


def demo_password() -> str:
    password = os.environ.get("AOR_DEMO_ANNOTATOR_PASSWORD") or DEFAULT_PASSWORD
    if len(password) < 8:
        raise WorkbenchError("AOR_DEMO_ANNOTATOR_PASSWORD must be at least 8 characters long")
    return password


def demo_account_token(server: Server, email: str, invite: list[str]) -> str:
    """Log the demo account in, or sign it up through the invite link first."""
    password = demo_password()
    token = login(server.url, email, password)
    if token is None:
        if not invite:
            invite.append(invite_link(server))
        token = signup_via_invite(server.url, invite[0], email, password)
    return token


# the demo accounts' API tokens, kept in the server's data dir beside its database (which holds every
# token): a person stays logged in from round to round, and a log-in costs the server about a second
SESSIONS_FILE = "demo-sessions.json"


class Sessions(dict):
    """email -> (an SDK client acting as that demo account, its user id), made once per run: signing up or
    logging in takes about a second an account, and the arms share their accounts. A token kept from an
    earlier run (SESSIONS_FILE) is used while the server still accepts it for that account."""

    def __init__(self, server: Server, quiet: bool = True):
        super().__init__()
        self.server, self.quiet, self.invite = server, quiet, []
        self.kept = None if server.data_dir is None else Path(server.data_dir) / SESSIONS_FILE

    def login(self, emails: Sequence[str]) -> None:
        todo = [email for email in emails if email not in self]
        if not todo:
            return
        kept = self._kept_tokens()
        renewed = {}
        for email in tqdm(todo, desc="demo accounts (sign up or log in)", unit="account", file=sys.stderr,
                          disable=self.quiet):
            session = self._resume(email, kept.get(email.lower()))
            if session is None:
                token = demo_account_token(self.server, email, self.invite)
                client = make_client(self.server.url, token)
                with self.server.errors(f"reading demo account {email}"):
                    session = (client, client.users.whoami().id)
                renewed[email.lower()] = token
            self[email] = session
        if renewed and self.kept is not None:
            atomic_write_text(self.kept, json.dumps({**kept, **renewed}, indent=1, sort_keys=True))  # mode 0600

    def _kept_tokens(self) -> dict[str, str]:
        try:
            kept = json.loads(self.kept.read_text()) if self.kept is not None and self.kept.is_file() else {}
        except (OSError, ValueError):
            return {}  # unreadable: the accounts log in again and the file is rewritten
        return {str(k): str(v) for k, v in kept.items()} if isinstance(kept, dict) else {}

    def _resume(self, email: str, token: str | None) -> tuple[Any, int] | None:
        """The account's session from a kept token; None when there is none, or the server no longer takes
        it as this account's (revoked, a new database, or another account's), or it cannot go in an HTTP
        header as it is (a corrupt file: a newline, a non-ASCII character): the account logs in again."""
        if not token or not header_safe(token):
            return None
        from label_studio_sdk.core.api_error import ApiError

        client = make_client(self.server.url, token)
        with self.server.errors(f"reading demo account {email}"):
            try:
                user = client.users.whoami()
            except ApiError as exc:
                if exc.status_code in (401, 403):
                    return None
                raise
        return (client, user.id) if (user.email or "").lower() == email.lower() else None

    def user_ids(self, emails: Sequence[str]) -> dict[str, int | None]:
        """email -> user id, from the admin's list of users, logging nobody in (a log-in through the form costs
        about a second); None for an account not signed up yet, which has labelled nothing."""
        listed: dict[str, int] = {}
        if any(email not in self for email in emails):
            listed = {address.lower(): user_id for user_id, address in user_emails(self.server).items()}
        return {email: self[email][1] if email in self else listed.get(email.lower()) for email in emails}


def task_overlaps(server: Server, project_id: int) -> dict[int, int]:
    """task id -> the labels Label Studio asks for it (its overlap: push raises it on a split staged task;
    the JSON export leaves it out)."""
    with server.errors(f"listing the overlaps of project {project_id}'s tasks"):
        return {int(t.id): int(t.overlap) for t in server.client.tasks.list(
            project=project_id, fields="task_only", include="id,overlap", page_size=1000)
            if getattr(t, "overlap", None) is not None}
