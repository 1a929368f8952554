"""The label-studio program and its child processes, apart from any one data dir's server.

annotation.server starts, checks and stops the server of a data dir; what that needs of the program
itself lives here: its venv and version, the admin credentials from the environment and the
environment a child gets, launching, reaping and ending a child, and the migrated database template
(built by running the program once) that seeds an empty data dir.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from construction.core.errors import WorkbenchError

LS_VERSION_PREFIX = "1.23."  # the series whose flags and settings this module and annotation.server were written against
DEFAULT_VENV = Path("/opt/aor-bench/label-studio-venv")
DEFAULT_ADMIN_EMAIL = "admin@aor-bench.local"
DEFAULT_ADMIN_PASSWORD = "aor-bench-local-demo"
DEFAULT_API_TOKEN = "aor-bench-local-demo-token"
HOST = "127.0.0.1"

LOG_FILE = "label-studio.log"
DB_FILE = "label_studio.sqlite3"
TEMPLATE_MARKER = "template.json"

# Only these variables reach Label Studio: it reads every setting X as LABEL_STUDIO_X, then bare X,
# so a stray USERNAME, PORT or HOST in the caller's environment would change its behaviour.
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")

# Popen objects of servers started by this process, so stop/status can reap them (no zombies).
_children: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True)
class AdminCredentials:
    email: str
    password: str
    token: str


def admin_credentials() -> AdminCredentials:
    """The admin account from the environment, falling back to the documented demo defaults."""
    creds = AdminCredentials(
        email=os.environ.get("LABEL_STUDIO_ADMIN_EMAIL") or DEFAULT_ADMIN_EMAIL,
        password=os.environ.get("LABEL_STUDIO_ADMIN_PASSWORD") or DEFAULT_ADMIN_PASSWORD,
        # a newline from `$(cat file)` or a copy is no part of the token
        token=(os.environ.get("LABEL_STUDIO_API_KEY") or "").strip() or DEFAULT_API_TOKEN,
    )
    # Label Studio silently ignores tokens of 5 characters or fewer.
    if len(creds.token) < 6:
        raise WorkbenchError("LABEL_STUDIO_API_KEY must be at least 6 characters long")
    if not header_safe(creds.token):
        raise WorkbenchError("LABEL_STUDIO_API_KEY holds a character an HTTP header cannot carry (a space, a "
                             "control character or a non-ASCII one): set it to the token as Label Studio shows it")
    return creds


def header_safe(token: str) -> bool:
    """Whether a token can go in an Authorization header as it is: visible ASCII only. Anything else
    fails in the HTTP client before a request is sent, as a crash or a misleading "cannot reach"."""
    return bool(re.fullmatch(r"[\x21-\x7e]+", token))


def api_token() -> str:
    return admin_credentials().token


def default_venv() -> Path:
    return Path(os.environ.get("AOR_LABEL_STUDIO_VENV") or DEFAULT_VENV)


def installed_version(venv: Path | None = None) -> str:
    """Version of Label Studio in the venv; WorkbenchError when it is missing or of another series."""
    venv = Path(venv or default_venv())
    exe = venv / "bin" / "label-studio"
    dist_infos = sorted(venv.glob("lib/python*/site-packages/label_studio-*.dist-info"))
    if not exe.exists() or not dist_infos:
        raise WorkbenchError(f"Label Studio is not installed in {venv}; run scripts/install_label_studio.sh {venv}")
    version = dist_infos[-1].name.removeprefix("label_studio-").removesuffix(".dist-info")
    if not version.startswith(LS_VERSION_PREFIX):
        raise WorkbenchError(
            f"Label Studio {version} in {venv}, but the workbench needs {LS_VERSION_PREFIX}x; "
            f"rerun scripts/install_label_studio.sh {venv}"
        )
    return version


def default_template_dir(venv: Path | None = None) -> Path:
    """Per-user cache of an initialised database, keyed by the Label Studio version."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    return cache / "aor-bench" / "ls-template" / installed_version(venv)


def _child_env(data_dir: Path, url: str, document_root: Path, creds: AdminCredentials | None) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=str(data_dir),
        LABEL_STUDIO_HOST=url,
        LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true",
        # read when the organisation is created (first start); later starts do not change it
        LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
        LABEL_STUDIO_LATEST_VERSION_CHECK="false",
        LABEL_STUDIO_SENTRY_DSN="",
        LABEL_STUDIO_FRONTEND_SENTRY_DSN="",
        LABEL_STUDIO_COLLECT_ANALYTICS="false",
        LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED="true",
        LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT=str(document_root),
        PYTHONUNBUFFERED="1",  # the log file shows progress as it happens
    )
    if creds is not None:
        # Passed by environment, not argv, so the password does not show in `ps`.
        env.update(
            LABEL_STUDIO_USERNAME=creds.email,
            LABEL_STUDIO_PASSWORD=creds.password,
            LABEL_STUDIO_USER_TOKEN=creds.token,
        )
    return env


def _pid_alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _log_tail(data_dir: Path, lines: int = 25) -> str:
    log = data_dir / LOG_FILE
    if not log.exists():
        return "(no log)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _log_size(data_dir: Path) -> int:
    try:
        return (data_dir / LOG_FILE).stat().st_size
    except OSError:
        return 0


def _last_log_line(data_dir: Path, since: int = 0) -> str:
    """What the server is doing now, from what its log gained after byte `since`: the migration it applies
    (the long first start), else nothing. Its other lines (settings it read, warnings) are Label Studio's
    business, not a person's."""
    try:
        with open(data_dir / LOG_FILE, "rb") as log:
            log.seek(max(since, log.seek(0, os.SEEK_END) - 4096))
            found = re.findall(r"Applying (\w+\.\w+)", log.read().decode(errors="replace"))
    except OSError:
        return ""
    return f"applying migration {found[-1]}" if found else ""


@contextlib.contextmanager
def ticker(desc: str, data_dir: Path, quiet: bool = False) -> Iterator[Callable[[], None]]:
    """A line on stderr (tqdm) with the seconds gone and the migration Label Studio applies, if it does, while
    it works; call the yielded function as often as you like (it redraws once a second)."""
    from tqdm import tqdm

    bar = tqdm(desc=desc, bar_format="{desc}: {elapsed}{postfix}", file=sys.stderr, disable=quiet)
    last, since = [0.0], _log_size(data_dir)

    def tick() -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            bar.set_postfix_str(_last_log_line(data_dir, since), refresh=False)
            bar.refresh()

    try:
        yield tick
    finally:
        bar.close()


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """TCP (address, port) pairs the process listens on, read from /proc (Linux)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            raw = bytes.fromhex(addr_hex)
            # /proc prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            family = socket.AF_INET if width == 4 else socket.AF_INET6
            found.append((socket.inet_ntop(family, raw), int(port_hex, 16)))
    return found


def _write_json_atomic(path: Path, payload: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=2)
    os.replace(tmp, path)


def owner_only(data_dir: Path) -> None:
    """The data dir, its database and log readable by their owner only: the database holds every token
    (the admin's and each annotator's) and every email. A data dir made before this was so is made so at
    the next start."""
    for path, mode in ((data_dir, 0o700), (data_dir / DB_FILE, 0o600), (data_dir / LOG_FILE, 0o600)):
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mode & 0o077:
                path.chmod(mode)


def _launch(
    venv: Path,
    data_dir: Path,
    port: int,
    document_root: Path,
    creds: AdminCredentials | None,
    args: list[str],
) -> subprocess.Popen:
    url = f"http://{HOST}:{port}"
    owner_only(data_dir)
    # the log is owner-only, and so is every file Label Studio makes (umask): its database has every token
    with open(os.open(data_dir / LOG_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        proc = subprocess.Popen(
            [str(venv / "bin" / "label-studio"), *args],
            env=_child_env(data_dir, url, document_root, creds),
            cwd=data_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives the CLI, and stop can signal its whole group
            umask=0o077,
        )
    _children[proc.pid] = proc
    return proc


def _terminate(pid: int, timeout_s: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError as e:
            raise WorkbenchError(f"not allowed to stop Label Studio (pid {pid}): {e}") from e
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                _children.pop(pid, None)
                return
            time.sleep(0.1)
    raise WorkbenchError(f"Label Studio (pid {pid}) did not exit after SIGKILL")


def make_template(
    template_dir: Path | str | None = None, venv: Path | str | None = None, timeout_s: float = 600.0,
    quiet: bool = True,
) -> Path:
    """Build (once) a migrated, user-less Label Studio database that start_server can copy.

    Safe to call from several processes at once: a lock file serialises the build. Unless quiet, the
    build (about a minute) ticks on stderr.
    """
    venv = Path(venv or default_venv())
    version = installed_version(venv)
    template_dir = Path(template_dir or default_template_dir(venv)).expanduser().resolve()
    marker = template_dir / TEMPLATE_MARKER
    if marker.exists():
        return template_dir
    template_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(template_dir.parent / f".{template_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():  # another process built it while we waited
            return template_dir
        build = Path(tempfile.mkdtemp(dir=template_dir.parent, prefix=f".{template_dir.name}.build-"))
        try:
            # `label-studio version` applies all migrations and exits: no port, no users.
            proc = _launch(venv, build, 0, build, None, ["version"])
            deadline = time.monotonic() + timeout_s
            with ticker(f"Label Studio {version}, once per machine: migrating an empty database into a template "
                        "(about a minute)", build, quiet) as tick:
                while (rc := proc.poll()) is None:
                    if time.monotonic() > deadline:
                        _terminate(proc.pid, timeout_s=10)
                        raise WorkbenchError(f"building the Label Studio template took over {timeout_s:.0f} s")
                    tick()
                    time.sleep(0.25)
            _children.pop(proc.pid, None)
            if rc != 0 or not (build / DB_FILE).exists():
                raise WorkbenchError(
                    f"building the Label Studio template failed (exit {rc}). Log tail:\n{_log_tail(build)}"
                )
            if template_dir.exists():
                shutil.rmtree(template_dir)
            template_dir.mkdir()
            # Only the database: each server makes its own secret key (.env) and media dirs.
            shutil.copyfile(build / DB_FILE, template_dir / DB_FILE)
            (template_dir / DB_FILE).chmod(0o600)  # it holds the admin's token
            _write_json_atomic(marker, {"label_studio_version": version})
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return template_dir
