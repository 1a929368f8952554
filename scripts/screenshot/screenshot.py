"""Screenshot of the labelling interface of one task, with headless Chromium over the DevTools
protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON; no websocket lib).

    python screenshot.py URL PROJECT_ID TASK_ID SESSIONID OUT.png
"""
import base64, json, os, subprocess, sys, tempfile, time

url, pid, tid, session, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
page_url = sys.argv[6] if len(sys.argv) > 6 else f"{url}/projects/{pid}/data?task={tid}"
import fcntl
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()
# Chromium reads fd 3 and writes fd 4; move our ends above them so dup2 never maps a fd onto itself
# (dup2 to the same number would keep it close-on-exec).
child_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10); os.close(to_chrome_r)
child_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10); os.close(from_chrome_w)
profile = tempfile.mkdtemp(prefix="chrome-profile-")
proc = subprocess.Popen(
    [os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
     "--disable-component-update", "--disable-sync", "--no-first-run", "--mute-audio", "--hide-scrollbars",
     f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1400,1000", "about:blank"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open("/tmp/annotation/chrome.log", "wb"),
    preexec_fn=lambda: (os.dup2(child_r, 3), os.dup2(child_w, 4)) and None, close_fds=False)
os.close(child_r); os.close(child_w)
reader = os.fdopen(from_chrome_r, "rb"); writer = os.fdopen(to_chrome_w, "wb")
buf = b""; next_id = 0

def send(method, params=None, session_id=None):
    global next_id, buf
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session_id: msg["sessionId"] = session_id
    writer.write(json.dumps(msg).encode() + b"\0"); writer.flush()
    while True:
        while b"\0" not in buf:
            chunk = os.read(from_chrome_r, 1 << 20)
            if not chunk: raise RuntimeError("chromium closed the pipe")
            buf += chunk
        raw, buf = buf.split(b"\0", 1)
        reply = json.loads(raw)
        if reply.get("id") == next_id:
            if "error" in reply: raise RuntimeError(f"{method}: {reply['error']}")
            return reply.get("result", {})

try:
    target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
    sid = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    send("Network.enable", session_id=sid)
    send("Network.setCookie", {"name": "sessionid", "value": session, "url": url}, sid)
    send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, sid)
    send("Page.enable", session_id=sid)
    send("Page.navigate", {"url": page_url}, sid)
    time.sleep(float(os.environ.get("WAIT_S", "12")))
    shot = send("Page.captureScreenshot", {"format": "png"}, sid)
    open(out, "wb").write(base64.b64decode(shot["data"]))
    print("wrote", out)
finally:
    proc.terminate(); proc.wait(10)
