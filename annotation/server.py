"""Run a local Label Studio in the background: its own venv, SQLite, bound to 127.0.0.1 only.

    python -m annotation.server start|status|stop [--workspace W] [--data-dir D]   (every flag: start --help)

Label Studio pins Django, pandas, pyarrow<25 and openai 1.x, so it lives in its own virtual
environment (scripts/install_label_studio.sh); the workbench talks to it over HTTP only.

Environment (secrets only from here; the workbench never writes them to its files or prints them):
  LABEL_STUDIO_ADMIN_EMAIL     admin created at first start   (default admin@aor-bench.local)
  LABEL_STUDIO_ADMIN_PASSWORD  its password                   (default aor-bench-local-demo)
  LABEL_STUDIO_API_KEY         its legacy API token, >= 6 chars; the SDK reads the same variable
                               (default aor-bench-local-demo-token)
  AOR_LABEL_STUDIO_VENV        the venv (default /opt/aor-bench/label-studio-venv)
  AOR_LABEL_STUDIO_DATA_DIR    the data dir when --data-dir is not given (default <workspace>/label-studio)
The defaults are for a local demo only: anyone on this machine could use them.

Each workspace has its own server by default: its data dir (database, log, server.json) is
<workspace>/label-studio, so one workspace's annotators never see another's projects. Every command that
talks to Label Studio finds the data dir the same way: --data-dir, else $AOR_LABEL_STUDIO_DATA_DIR, else
<workspace>/label-studio.

Label Studio serves files under its document root to every logged-in user, and in the community
edition any annotator may add a local-files storage for any directory below it. So the document root
is the workspace's audio store, <W>/audio, and never a directory that holds a workspace's
annotation.json (its pseudonym salt) or a Label Studio data dir (tokens, emails, secret key): what is
refused, annotation.docroot. A server started for a workspace records it (annotation.ownership).

This module is the server of a data dir (its server.json, port, health, document root) and the CLI;
the label-studio program itself (venv, credentials, child processes, database template) is
annotation.ls_process.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from annotation.ls_process import (  # listening_addresses: importable from here, as before
    DB_FILE,
    DEFAULT_VENV,
    HOST,
    TEMPLATE_MARKER,
    _launch,
    _log_tail,
    _pid_alive,
    _terminate,
    _write_json_atomic,
    admin_credentials,
    api_token,
    default_venv,
    installed_version,
    listening_addresses,
    make_template,
    ticker,
)
# STATE_FILE, TASKS_FILE: importable from here, as before
from annotation.docroot import STATE_FILE, TASKS_FILE, check_document_root  # noqa: F401
from annotation.ownership import check_server_owner
from construction.core.cli import Parser, add_workspace, run_main
from construction.core.errors import WorkbenchError

DATA_DIR_ENV = "AOR_LABEL_STUDIO_DATA_DIR"
DATA_DIR_NAME = "label-studio"  # <workspace>/label-studio: the data dir when neither flag nor variable says
DEFAULT_WORKSPACE = "workspace"

INFO_FILE = "server.json"  # pid, port, url of the running server


@dataclass(frozen=True)
class ServerInfo:
    url: str
    port: int
    pid: int
    data_dir: Path
    document_root: Path  # what it serves as local files; /data/local-files/?d=... is relative to it
    workspace: Path | None = None  # the workspace it was started for (it serves its audio store), if one


@dataclass(frozen=True)
class ProjectProgress:
    id: int
    title: str
    task_count: int
    annotated_task_count: int
    annotation_count: int


@dataclass(frozen=True)
class ServerStatus:
    info: ServerInfo
    version: str
    projects: list[ProjectProgress]


def default_data_dir(workspace: Path | str = DEFAULT_WORKSPACE) -> Path:
    """The data dir when no --data-dir is given: $AOR_LABEL_STUDIO_DATA_DIR, else <workspace>/label-studio."""
    # DATA_DIR_ENV spelled out: tests/test_cli_convention.py finds the variables a command reads in its source
    env = os.environ.get("AOR_LABEL_STUDIO_DATA_DIR")
    return Path(env).expanduser() if env else Path(workspace).expanduser() / DATA_DIR_NAME


def resolve_data_dir(data_dir: Path | str | None = None, workspace: Path | str = DEFAULT_WORKSPACE) -> Path:
    """--data-dir > $AOR_LABEL_STUDIO_DATA_DIR > <workspace>/label-studio, as an absolute path."""
    return Path(data_dir or default_data_dir(workspace)).expanduser().resolve()


def server_flags(workspace: Path | str | None = DEFAULT_WORKSPACE, data_dir: Path | str | None = None) -> str:
    """The flags that pick the same server again, for a hint that is a complete command: --workspace
    unless it is the default one, --data-dir when one was given (the variable, if set, still is)."""
    parts: list[str] = []
    if workspace is not None and Path(workspace).expanduser().resolve() != Path(DEFAULT_WORKSPACE).resolve():
        parts += ["--workspace", str(workspace)]
    if data_dir:
        parts += ["--data-dir", str(data_dir)]
    return "".join(" " + shlex.quote(p) for p in parts)


def server_command(action: str, workspace: Path | str | None = DEFAULT_WORKSPACE,
                   data_dir: Path | str | None = None) -> str:
    """e.g. 'python -m annotation.server start --workspace ws2': pasteable as it is."""
    return f"python -m annotation.server {action}{server_flags(workspace, data_dir)}"


def own_server_command(workspace: Path | str) -> str:
    """The command that starts the workspace's own server, in its own data dir: <workspace>/label-studio,
    named outright when $AOR_LABEL_STUDIO_DATA_DIR (which would pick another) is set."""
    own = Path(workspace).expanduser() / DATA_DIR_NAME if os.environ.get("AOR_LABEL_STUDIO_DATA_DIR") else None
    return server_command("start", workspace, own)


DATA_DIR_HELP = (f"Label Studio's data folder: database, media, log, the running server's record (default: "
                 f"${DATA_DIR_ENV} if set, else <workspace>/{DATA_DIR_NAME})")


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """--data-dir, the same on every command that finds Label Studio by its data folder."""
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help=DATA_DIR_HELP)


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if s.connect_ex((HOST, port)) == 0:  # Label Studio's own test: something answers
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _http_get(url: str, timeout_s: float = 5.0) -> tuple[int, bytes]:
    # No proxies: the server is on loopback and an HTTP(S)_PROXY variable must not reroute it.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _healthy(url: str) -> bool:
    try:
        status, body = _http_get(url + "/health", timeout_s=2.0)
    except OSError:
        return False
    return status == 200 and b'"UP"' in body


def _is_label_studio(pid: int) -> bool:
    """Guards against a recycled pid: only signal a process that is Label Studio."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc to ask (not Linux): trust the pid file
    return b"label-studio" in cmdline


def read_server_info(data_dir: Path | str | None = None) -> ServerInfo | None:
    """The recorded server of a data dir, or None when none was started there."""
    data_dir = resolve_data_dir(data_dir)
    path = data_dir / INFO_FILE
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        # A server.json without a document root was written when "/" was the default.
        return ServerInfo(url=raw["url"], port=int(raw["port"]), pid=int(raw["pid"]), data_dir=data_dir,
                          document_root=Path(raw.get("document_root", "/")),
                          workspace=Path(raw["workspace"]) if raw.get("workspace") else None)
    except (ValueError, KeyError, TypeError) as e:
        raise WorkbenchError(f"{path} is unreadable ({e}); stop the server by hand and delete it") from e


def start_server(
    data_dir: Path | str | None = None,
    port: int | None = None,
    template: Path | str | bool | None = None,
    document_root: Path | str | None = None,
    venv: Path | str | None = None,
    timeout_s: float = 300.0,
    workspace: Path | str = DEFAULT_WORKSPACE,
    quiet: bool = True,
) -> ServerInfo:
    """Start Label Studio for data_dir (default: resolve_data_dir) and wait until it answers; return where
    it listens.

    It serves local files from document_root, by default <workspace>/audio (made when missing); see
    check_document_root for what is refused. An empty data_dir is seeded from template (a dir made by
    make_template; True: the per-user cached one, built on first use), which skips the database
    migration of a first start. Returns the existing server if one already runs there with the same
    document root. Unless quiet, each slow step ticks on stderr.
    """
    venv = Path(venv or default_venv())
    installed_version(venv)
    data_dir = resolve_data_dir(data_dir, workspace)
    workspace = Path(workspace).expanduser().resolve()
    owner = None  # a server of one workspace's audio store is that workspace's (annotation.ownership)
    if document_root is None:
        document_root, owner = workspace / "audio", workspace
    else:
        document_root = Path(document_root).expanduser().resolve()
        if not document_root.is_dir():
            raise WorkbenchError(f"document root {document_root} is not a directory")
    check_document_root(document_root, data_dir, workspace)
    creds = admin_credentials()

    running = read_server_info(data_dir)
    if running is not None and _pid_alive(running.pid):
        stop = server_command("stop", data_dir=data_dir)
        if owner is not None:  # started for this workspace: one started for another is left running
            check_server_owner(running, owner, own_server_command(workspace))
        if running.document_root != document_root:
            raise WorkbenchError(
                f"Label Studio already runs for {data_dir} (pid {running.pid}) with document root "
                f"{running.document_root}, not {document_root}; stop it first: {stop}"
            )
        if port is not None and port != running.port:
            raise WorkbenchError(
                f"Label Studio already runs for {data_dir} on port {running.port} (pid {running.pid}); "
                f"stop it before starting on port {port}: {stop}"
            )
        if _healthy(running.url):
            return running
        raise WorkbenchError(
            f"Label Studio (pid {running.pid}) for {data_dir} is not answering at {running.url}; "
            f"stop it first: {stop}. Log tail:\n{_log_tail(data_dir)}"
        )

    if port is None:
        port = free_port()
    elif not _port_is_free(port):
        # Label Studio would silently move to the next port; refuse instead.
        raise WorkbenchError(f"port {port} on {HOST} is in use; choose another --port or leave it out")

    first = not (data_dir / DB_FILE).exists()
    if isinstance(template, bool):  # True: the cached template, only when there is a database to seed
        template = make_template(venv=venv, quiet=quiet) if template and first else None
    if template is not None and not (Path(template) / TEMPLATE_MARKER).exists():
        raise WorkbenchError(f"{template} is not a Label Studio template (no {TEMPLATE_MARKER}); see make_template")
    document_root.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    if template is not None and first:
        shutil.copyfile(Path(template) / DB_FILE, data_dir / DB_FILE)

    url = f"http://{HOST}:{port}"
    proc = _launch(
        venv,
        data_dir,
        port,
        document_root,
        creds,
        ["start", "--no-browser", "--internal-host", HOST, "--port", str(port), "--host", url],
    )
    info = ServerInfo(url=url, port=port, pid=proc.pid, data_dir=data_dir, document_root=document_root,
                      workspace=owner)
    what = ("first start: migrating an empty database, then creating the admin (a minute or two)"
            if first and template is None else
            "first start: creating the admin" if first else "starting")
    try:
        with ticker(f"Label Studio at {url}, {what}", data_dir, quiet) as tick:
            _wait_until_serving(info, timeout_s, tick)
    except BaseException:
        _terminate(proc.pid, timeout_s=10)
        raise
    _write_json_atomic(
        data_dir / INFO_FILE, {"url": url, "port": port, "pid": proc.pid, "document_root": str(document_root),
                               **({"workspace": str(owner)} if owner else {})}
    )
    return info


def _wait_until_serving(info: ServerInfo, timeout_s: float, tick: Callable[[], None] = lambda: None) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if not _pid_alive(info.pid):
            raise WorkbenchError(
                f"Label Studio exited during start (data dir {info.data_dir}). Log tail:\n{_log_tail(info.data_dir)}"
            )
        if _healthy(info.url):
            break
        if time.monotonic() > deadline:
            raise WorkbenchError(
                f"Label Studio did not answer at {info.url}/health within {timeout_s:.0f} s. "
                f"Log tail:\n{_log_tail(info.data_dir)}"
            )
        tick()
        time.sleep(0.25)
    # The health answer must come from our process, on our port, on loopback only.
    if Path(f"/proc/{info.pid}/fd").exists():
        addresses = listening_addresses(info.pid)
        if addresses != [(HOST, info.port)]:
            raise WorkbenchError(
                f"Label Studio (pid {info.pid}) listens on {addresses}, expected only {HOST}:{info.port}"
            )


def stop_server(data_dir: Path | str | None = None, timeout_s: float = 20.0,
                workspace: Path | str = DEFAULT_WORKSPACE) -> bool:
    """Stop the server of data_dir (default: resolve_data_dir); False when none was running (a stale pid
    file is removed)."""
    data_dir = resolve_data_dir(data_dir, workspace)
    info = read_server_info(data_dir)
    if info is None:
        return False
    was_running = _pid_alive(info.pid) and _is_label_studio(info.pid)
    if was_running:
        _terminate(info.pid, timeout_s)
    (data_dir / INFO_FILE).unlink(missing_ok=True)
    return was_running


def _project_progress(url: str, token: str) -> list[ProjectProgress]:
    from label_studio_sdk import LabelStudio  # slow import (~2 s): only when projects are asked for
    from label_studio_sdk.core.api_error import ApiError

    client = LabelStudio(base_url=url, api_key=token, timeout=30)
    try:
        return [
            ProjectProgress(
                id=p.id,
                title=p.title or "",
                task_count=p.task_number or 0,
                annotated_task_count=p.num_tasks_with_annotations or 0,
                annotation_count=p.total_annotations_number or 0,
            )
            for p in client.projects.list()
        ]
    except ApiError as e:
        if e.status_code == 401:
            raise WorkbenchError(
                f"Label Studio at {url} rejected the API token (401); set LABEL_STUDIO_API_KEY to the admin's token"
            ) from e
        raise WorkbenchError(f"Label Studio at {url} answered {e.status_code} listing projects: {e.body}") from e


def server_status(
    data_dir: Path | str | None = None, token: str | None = None, with_projects: bool = True,
    workspace: Path | str = DEFAULT_WORKSPACE,
) -> ServerStatus:
    """URL, version and project progress of the running server; WorkbenchError when it is down. The
    hints name `workspace` and `data_dir` as given, so they are commands that pick this server again."""
    start = server_command("start", workspace, data_dir)
    resolved = resolve_data_dir(data_dir, workspace)
    info = read_server_info(resolved)
    if info is None:
        raise WorkbenchError(f"Label Studio is not running for {resolved}; start it with: {start}")
    if not _pid_alive(info.pid):
        raise WorkbenchError(
            f"Label Studio (pid {info.pid}) for {resolved} is gone; start it again: {start}. "
            f"Log tail:\n{_log_tail(resolved)}"
        )
    try:
        code, body = _http_get(info.url + "/api/version")
    except OSError as e:
        raise WorkbenchError(f"Label Studio at {info.url} is not answering: {e}") from e
    if code != 200:
        raise WorkbenchError(f"Label Studio at {info.url} answered {code} to /api/version")
    version = json.loads(body).get("release", "?")
    projects = _project_progress(info.url, token or api_token()) if with_projects else []
    return ServerStatus(info=info, version=version, projects=projects)


# the data folder; the admin account (made at the first start) and its token; Label Studio's venv
STATUS_ENV = ("AOR_LABEL_STUDIO_DATA_DIR", "LABEL_STUDIO_API_KEY", "LABEL_STUDIO_ADMIN_EMAIL",
              "LABEL_STUDIO_ADMIN_PASSWORD")
START_ENV = (*STATUS_ENV, "AOR_LABEL_STUDIO_VENV", "XDG_CACHE_HOME")  # the database template's cache


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.server", description=__doc__.split("\n")[0],
                    epilog="The admin defaults are for a local demo on a loopback-only server: anyone on this machine "
                           "could use them.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, what, env in (
            ("start", "start the workspace's Label Studio in the background on 127.0.0.1 (or say where it runs)",
             START_ENV),
            ("stop", "stop the workspace's Label Studio", ("AOR_LABEL_STUDIO_DATA_DIR",)),
            ("status", "say whether it runs, where, and each project's progress", STATUS_ENV)):
        p = sub.add_parser(name, help=what, env=env)
        if name == "start":  # picks the data dir (<workspace>/label-studio) and the audio served
            add_workspace(p)
        else:  # given, a server started for another workspace is refused
            p.add_argument("--workspace", default=None, metavar="DIR",
                           help=f"the workspace whose server this is: picks its data dir (default: ./{DEFAULT_WORKSPACE}); "
                                "given, a server started for another workspace is refused")
        add_data_dir(p)
        if name == "start":
            p.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
            p.add_argument("--template", type=Path, default=None,
                           help="seed an empty data dir from this template (default: the per-user cached one, "
                                "~/.cache/aor-bench/ls-template/<version>, built on first use)")
            p.add_argument("--no-template", action="store_true",
                           help="migrate an empty data dir's database from scratch instead (a minute or two)")
            p.add_argument("--document-root", type=Path, default=None,
                           help="serve local files from here, a folder of audio only (default: <workspace>/audio)")
            p.add_argument("--venv", type=Path, default=None,
                           help="Label Studio's virtual environment (default: $AOR_LABEL_STUDIO_VENV, else "
                                f"{DEFAULT_VENV})")
            p.add_argument("--timeout-s", type=float, default=300.0,
                           help="seconds to wait for it to answer (the first start migrates a database: a minute)")
            p.add_argument("--quiet", action="store_true", help="no progress line")
    return parser


def check_workspace(args: argparse.Namespace) -> None:
    """`start` serves the workspace's audio and keeps its data in it: a folder that is no workspace (a typo)
    is refused before anything is made. Only with both --document-root and a data dir it names nothing."""
    root = Path(args.workspace).expanduser()
    if (root / "manifests").is_dir() or (args.document_root and (args.data_dir or
                                                                 os.environ.get("AOR_LABEL_STUDIO_DATA_DIR"))):
        return
    installed_version(Path(args.venv or default_venv()))  # a missing Label Studio is said first
    raise WorkbenchError(f"{root} is not a workspace ({'no manifests/ in it' if root.is_dir() else 'no such folder'});"
                         f" build one first: python -m construction.pipeline --workspace {shlex.quote(str(root))} "
                         "--per-category 1, or name yours with --workspace")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    named = args.workspace is not None  # status and stop: a workspace given must own the server
    args.workspace = args.workspace or DEFAULT_WORKSPACE
    data_dir = resolve_data_dir(args.data_dir, args.workspace)
    if named and args.command != "start" and (running := read_server_info(data_dir)) is not None:
        check_server_owner(running, Path(args.workspace).expanduser().resolve(),
                           own_server_command(args.workspace))
    if args.command == "start":
        check_workspace(args)
        template = False if args.no_template else args.template or True
        info = start_server(args.data_dir, args.port, template, args.document_root, args.venv, args.timeout_s,
                            args.workspace, quiet=args.quiet)
        print(f"Label Studio running at {info.url} (pid {info.pid}, data dir {info.data_dir}, "
              f"serving {info.document_root})")
        print(f"stop it with: {server_command('stop', args.workspace, args.data_dir)}")
    elif args.command == "stop":
        if stop_server(data_dir):
            print(f"Label Studio stopped (data dir {data_dir})")
        else:
            print(f"Label Studio was not running (data dir {data_dir})")
    else:
        st = server_status(args.data_dir, workspace=args.workspace)
        print(f"Label Studio {st.version} running at {st.info.url} (pid {st.info.pid}, data dir {st.info.data_dir}, "
              f"serving {st.info.document_root})")
        if not st.projects:
            print("no projects")
        for p in st.projects:
            print(f"project {p.id} {p.title!r}: {p.task_count} tasks, "
                  f"{p.annotated_task_count} with annotations, {p.annotation_count} annotations")
    return 0


if __name__ == "__main__":
    run_main(main)  # a WorkbenchError: 'error: ...' (redacted) and exit status 2
