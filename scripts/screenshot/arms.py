"""Screenshots of each arm's labelling view, from a real Label Studio, in headless Chromium.

    python scripts/screenshot/arms.py --workspace W [--data-dir D | --url URL] [--out docs] [--sample ID]

For a workspace that was pushed (python -m annotation.push), this logs an annotator account
(screenshots@demo.aor-bench.invalid, made through the invite link when missing) in through
/user/login/, hands the session cookie to Chromium through the DevTools protocol on
--remote-debugging-pipe (fd 3 in, fd 4 out, NUL-separated JSON: no websocket library needed), opens
one task per arm as that annotator (/projects/<id>/data?task=<task id>: the first sample of the 'wer'
manifest, or --sample) and writes OUT/arm-speech.png, OUT/arm-scene.png and OUT/arm-mixture.png.
Take them before anyone labels those tasks: the Data Manager's task view shows the annotations a task
already has. Needs Chromium (apt-get install chromium; CHROMIUM=path overrides /usr/lib/chromium/chromium).
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from annotation.labelstudio import (  # noqa: E402
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
PASSWORD = os.environ.get("AOR_SCREENSHOT_PASSWORD") or "aor-bench-screenshots"
WIDTH, HEIGHT = 1400, 900


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", default="workspace", help="a pushed workspace (default: ./workspace)")
    parser.add_argument("--out", type=Path, default=Path("docs"), help="where the PNGs go (default: docs)")
    parser.add_argument("--sample", help="the sample to show (default: the first of the 'wer' manifest)")
    parser.add_argument("--wait-s", type=float, default=60.0, help="how long a page may take to draw (default 60)")
    add_server_args(parser)
    args = parser.parse_args(argv)

    ws = open_workspace(args.workspace)
    arms = read_state(ws).get("arms") or {}
    if set(arms) != set(ARMS):
        raise WorkbenchError(f"{ws.root} has no pushed arm projects; run python -m annotation.push first")
    sample_id = args.sample or next(iter(ws.read_samples("wer"))).sample_id
    keys = {(item, role): key for key, (item, role) in read_task_map(ws).items()}
    server = connect_from_args(args)
    token = login(server.url, EMAIL, PASSWORD)
    if token is None:
        signup_via_invite(server.url, invite_link(server), EMAIL, PASSWORD)
    cookie = session_cookie(server.url, EMAIL, PASSWORD)
    args.out.mkdir(parents=True, exist_ok=True)
    chrome = Chromium(args.out / ".chromium.log")
    try:
        for role in ARMS:
            project_id = int(arms[role]["id"])
            key = keys.get((sample_id, role))
            task_ids = task_keys(server, project_id).get(key or "", [])
            if not task_ids:
                raise WorkbenchError(f"sample {sample_id} has no task in the {role} project {project_id}")
            if server.client.tasks.get(str(task_ids[0])).total_annotations:
                print(f"warning: the {role} task of {sample_id} has annotations; the view shows them",
                      file=sys.stderr)
            out = args.out / f"arm-{role}.png"
            capture(chrome, server.url, f"{server.url}/projects/{project_id}/data?task={task_ids[0]}", cookie,
                    out, args.wait_s)
            print(f"wrote {out} ({role} arm, task {task_ids[0]}, project {project_id})")
    finally:
        chrome.close()
        (args.out / ".chromium.log").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    from construction.core.cli import run_main

    run_main(main, sys.argv[1:])
