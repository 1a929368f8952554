"""Screenshots of each arm's labelling view, from a real Label Studio, in headless Chromium.

    python scripts/screenshot/arms.py [--workspace W] [--data-dir D | --url URL] [--out DIR] [--sample ID]

For a workspace that was pushed (python -m annotation.push), this logs an annotator account in through
/user/login/ (--email, default screenshots@demo.aor-bench.invalid, made through the invite link when
missing), hands the session cookie to Chromium through the DevTools protocol on --remote-debugging-pipe
(fd 3 in, fd 4 out, NUL-separated JSON: no websocket library needed), opens one task per arm as that
annotator (/projects/<id>/data?task=<task id>) and writes OUT/arm-<arm>.png (OUT defaults to
<workspace>/screenshots) for each arm that has a task of the sample: --sample, else the first sample of
the 'wer' manifest among those that reached the most arms. A staged push fills the arms in rounds (a
sample's scene after its speech arm passed, its mixture after both): an arm with no task yet is named,
with why, and not captured.

The account's password: $AOR_SCREENSHOT_PASSWORD when set, else one generated for a new account and
printed once (an account made by an earlier run, whose password is not known, is left alone: the next
free screenshots-N@ address is made instead). Take the screenshots before anyone labels those tasks:
the Data Manager's task view shows the annotations a task already has. Needs Chromium (set-up installs
it; CHROMIUM=path overrides /usr/lib/chromium/chromium).
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from annotation.labelstudio import (  # noqa: E402
    Server,
    add_server_args,
    connect_from_args,
    invite_link,
    login,
    signup_via_invite,
    task_keys,
)
from annotation.protocol import read_task_map  # noqa: E402
from annotation.state import DEMO_EMAIL_DOMAIN, open_workspace, read_state  # noqa: E402
from construction.core.errors import WorkbenchError  # noqa: E402
from construction.core.record import ARMS  # noqa: E402

EMAIL = f"screenshots@{DEMO_EMAIL_DOMAIN}"
PASSWORD_ENV = "AOR_SCREENSHOT_PASSWORD"
MAX_ACCOUNTS = 20  # screenshots@, screenshots-2@, ...: accounts an earlier run made with a password not known
WIDTH, HEIGHT = 1400, 900
# why a staged arm has no task of a sample yet (annotation.staging)
WAITS = {"scene": "a sample's scene opens only after its speech arm passed",
         "mixture": "a sample's mixture opens only after its speech and scene arms passed"}


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe."""

    def __init__(self, log: Path):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # Chromium reads fd 3 and writes fd 4; move our ends above them so dup2 never maps a fd onto
        # itself (dup2 to the same number would keep it close-on-exec).
        child_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
        child_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
        os.close(to_r)
        os.close(from_w)
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile-", ignore_cleanup_errors=True)
        exe = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")
        if not Path(exe).exists():
            raise WorkbenchError(f"no Chromium at {exe}; apt-get install chromium, or set CHROMIUM=path")
        with open(log, "wb") as err:
            self.proc = subprocess.Popen(
                [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--mute-audio",
                 "--hide-scrollbars", f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe",
                 f"--window-size={WIDTH},{HEIGHT}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                preexec_fn=lambda: (os.dup2(child_r, 3), os.dup2(child_w, 4)) and None, close_fds=False)
        os.close(child_r)
        os.close(child_w)
        self.read_fd, self.writer = from_r, os.fdopen(to_w, "wb")
        self.buf, self.next_id = b"", 0

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.writer.write(json.dumps(msg).encode() + b"\0")
        self.writer.flush()
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise WorkbenchError("Chromium closed the DevTools pipe (see its log)")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise WorkbenchError(f"Chromium: {method}: {reply['error']}")
                return reply.get("result", {})

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.profile.cleanup()


def session_cookie(url: str, email: str, password: str) -> str:
    """Log in through the login form, as a browser does; -> the sessionid cookie."""
    with httpx.Client(base_url=url, trust_env=False, timeout=60) as web:
        page = web.get("/user/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        if not csrf:
            raise WorkbenchError(f"{url}/user/login/ shows no login form (HTTP {page.status_code})")
        answer = web.post("/user/login/", data={"email": email, "password": password,
                                                "csrfmiddlewaretoken": csrf.group(1)})
        if answer.status_code != 302 or "sessionid" not in web.cookies:
            raise WorkbenchError(f"logging {email} in at {url} failed (HTTP {answer.status_code})")
        return web.cookies["sessionid"]


READY_JS = """(() => {
  const choices = document.querySelectorAll('.lsf-choice, .ant-checkbox-wrapper, .ant-radio-wrapper, [class*="choice"]');
  const audio = document.querySelector('audio, canvas, [class*="waveform"], [class*="Waveform"]');
  return choices.length > 0 && !!audio;
})()"""


def capture(chrome: Chromium, url: str, page: str, cookie: str, out: Path, wait_s: float) -> None:
    target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    sid = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    chrome.send("Network.enable", session=sid)
    chrome.send("Network.setCookie", {"name": "sessionid", "value": cookie, "url": url}, sid)
    chrome.send("Emulation.setDeviceMetricsOverride",
                {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}, sid)
    chrome.send("Page.enable", session=sid)
    chrome.send("Page.navigate", {"url": page}, sid)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        done = chrome.send("Runtime.evaluate", {"expression": READY_JS, "returnByValue": True}, sid)
        if done.get("result", {}).get("value") is True:
            break
        time.sleep(0.5)
    else:
        print(f"warning: {page} did not show the choices and the player within {wait_s:.0f} s; captured as is",
              file=sys.stderr)
    time.sleep(3.0)  # the waveform draws after the audio has loaded
    shot = chrome.send("Page.captureScreenshot", {"format": "png"}, sid)
    out.write_bytes(base64.b64decode(shot["data"]))
    chrome.send("Target.closeTarget", {"targetId": target})


def account(server: Server, email: str) -> tuple[str, str]:
    """(email, password) of an account that can log in: $AOR_SCREENSHOT_PASSWORD's, or a new account with
    a generated password (said once, on stdout)."""
    given = os.environ.get(PASSWORD_ENV)
    if given:
        if login(server.url, email, given) is None:
            signup_via_invite(server.url, invite_link(server), email, given)
            print(f"made the annotator account {email} (password from ${PASSWORD_ENV})")
        else:
            print(f"logged in as {email} (password from ${PASSWORD_ENV})")
        return email, given
    name, _, domain = email.partition("@")
    invite = invite_link(server)
    for n in range(1, MAX_ACCOUNTS + 1):
        candidate = email if n == 1 else f"{name}-{n}@{domain}"
        password = secrets.token_urlsafe(12)
        try:
            signup_via_invite(server.url, invite, candidate, password)
        except WorkbenchError as e:
            if "account exists" not in str(e):
                raise
            continue  # made by an earlier run: its password was printed then, not kept
        print(f"made the annotator account {candidate} with the generated password {password} (shown only now; "
              f"set {PASSWORD_ENV} to choose the password and reuse an account)")
        return candidate, password
    raise WorkbenchError(f"{MAX_ACCOUNTS} screenshot accounts like {email} exist already; set {PASSWORD_ENV} to the "
                         "password of one of them, or pass another --email")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog=f"environment: {PASSWORD_ENV} (the account's password), CHROMIUM, "
                                            "LABEL_STUDIO_API_KEY, AOR_LABEL_STUDIO_DATA_DIR")
    parser.add_argument("--workspace", default="workspace", help="a pushed workspace (default: ./workspace)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the PNGs go (default: <workspace>/screenshots)")
    parser.add_argument("--sample", help="the sample to show (default: the first of the 'wer' manifest among those "
                                         "with tasks in the most arms)")
    parser.add_argument("--email", default=EMAIL, help=f"the annotator account to log in as (default {EMAIL})")
    parser.add_argument("--wait-s", type=float, default=60.0, help="how long a page may take to draw (default 60)")
    add_server_args(parser)
    args = parser.parse_args(argv)

    ws = open_workspace(args.workspace)
    out_dir = args.out if args.out is not None else ws.root / "screenshots"
    state = read_state(ws)
    arms = state.get("arms") or {}
    if set(arms) != set(ARMS):
        raise WorkbenchError(f"{ws.root} has no pushed arm projects; run python -m annotation.push first")
    server = connect_from_args(args)
    mapping = read_task_map(ws)
    tasks = {role: task_keys(server, int(arms[role]["id"])) for role in ARMS}
    has = {role: {mapping[k][0] for k in keys if k in mapping} for role, keys in tasks.items()}
    order = [s.sample_id for s in ws.read_samples("wer")]
    if args.sample is None:  # the deepest sample: a staged push fills later arms with fewer samples
        sample_id = max(order, key=lambda sid: sum(sid in has[role] for role in ARMS))
    elif args.sample in order:
        sample_id = args.sample
    else:
        raise WorkbenchError(f"sample {args.sample} is not in {ws.manifest_path('wer')}")
    keys = {role: key for key, (item, role) in mapping.items() if item == sample_id}
    shots, skipped = {}, []
    for role in ARMS:
        ids = tasks[role].get(keys.get(role, ""), [])
        if ids:
            shots[role] = ids[0]
            continue
        staged = state.get("staged") and role in WAITS
        if not tasks[role]:
            why = f"staged: {WAITS[role]}, and none has yet" if staged else "no task was pushed to it"
            skipped.append(f"{role} arm: empty ({why}); not captured")
        else:
            why = f"staged: {WAITS[role]}" if staged else "it was not pushed"
            skipped.append(f"{role} arm: sample {sample_id} has no task there yet ({why}); not captured")
    for line in skipped:
        print(line)
    if not shots:
        raise WorkbenchError(f"no arm of {ws.root} has a task of sample {sample_id}: nothing to capture")
    email, password = account(server, args.email)
    cookie = session_cookie(server.url, email, password)
    out_dir.mkdir(parents=True, exist_ok=True)
    chrome = Chromium(out_dir / ".chromium.log")
    try:
        for role, task_id in shots.items():
            project_id = int(arms[role]["id"])
            if server.client.tasks.get(str(task_id)).total_annotations:
                print(f"warning: the {role} task of {sample_id} has annotations; the view shows them",
                      file=sys.stderr)
            out = out_dir / f"arm-{role}.png"
            capture(chrome, server.url, f"{server.url}/projects/{project_id}/data?task={task_id}", cookie,
                    out, args.wait_s)
            print(f"wrote {out} ({role} arm, sample {sample_id}, task {task_id}, project {project_id})")
    finally:
        chrome.close()
        (out_dir / ".chromium.log").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    from construction.core.cli import run_main

    run_main(main, sys.argv[1:])
