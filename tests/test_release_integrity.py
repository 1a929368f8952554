"""Issue 21 (production path and integrity) and issue 26 (items 8, 9): what a push leaves on the Hub, what
--private means for a repo that exists, the card's own usage snippet, the release shipping only what
validation decided, non-finite numbers, splits and the labels' source. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from construction.errors import WorkbenchError
from release.export import main as export_main
from tests.test_release import hub, load_in_fresh_process, make_workspace, tree_bytes  # noqa: F401 (fixture)


def _push(ws, out: Path, version: str, *extra: str) -> int:
    return export_main(["--workspace", str(ws.root), "--out", str(out), "--version", version,
                        "--push-to-hub", "aor/bench", *extra])


# --- item 2: the repo holds exactly the pushed release ------------------------------------------------

def test_a_push_removes_what_the_previous_version_left(hub, tmp_path):
    """v1: two shards and a controls config; v2: one shard, no controls. The repo (and the v2 tag) holds
    v2 exactly and loads; v1's tag still holds v1; a file the release does not manage is kept."""
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    assert _push(make_workspace(tmp_path / "ws1", n=6), v1, "1.0.0", "--max-shard-mb", "0.03") == 0
    assert len(list((v1 / "data").glob("*.parquet"))) > 1 and (v1 / "controls").is_dir()
    repo = hub.repos[("dataset", "aor/bench")]
    repo.files["NOTES.md"] = b"kept by the maintainers"  # not a release folder: never deleted
    assert _push(make_workspace(tmp_path / "ws2", n=4, controls=False), v2, "2.0.0") == 0

    assert repo.files == {**tree_bytes(v2), "NOTES.md": b"kept by the maintainers"}
    assert repo.files_at("1.0.0") == tree_bytes(v1)
    tagged = tmp_path / "tag-2.0.0"
    for rel, data in repo.files_at("2.0.0").items():
        (tagged / rel).parent.mkdir(parents=True, exist_ok=True)
        (tagged / rel).write_bytes(data)
    result = load_in_fresh_process(tagged, tmp_path)  # the real `datasets` loader, offline
    assert result["configs"] == ["default"] and len(result["folder"]["rows"]) == 4


# --- item 3: --private on a repo that exists ------------------------------------------------------------

def test_private_is_refused_for_a_public_repo_unless_asked_to_change_it(hub, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    assert _push(ws, tmp_path / "out", "1.0.0") == 0
    repo = hub.repos[("dataset", "aor/bench")]
    assert not repo.private
    commits = len(repo.commits)
    with pytest.raises(WorkbenchError, match="datasets/aor/bench exists and is public: --private would publish"):
        _push(ws, tmp_path / "out", "1.0.1", "--private")
    assert len(repo.commits) == commits and "1.0.1" not in repo.tags and not repo.private
    capsys.readouterr()
    assert _push(ws, tmp_path / "out", "1.0.1", "--private", "--make-private") == 0
    assert repo.private and repo.tags["1.0.1"] == repo.head
    assert ("PUT", "/api/datasets/aor/bench/settings") in hub.requests
    assert "datasets/aor/bench (private) at commit" in capsys.readouterr().out


def test_a_public_push_into_a_private_repo_says_it_stays_private(hub, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    assert _push(ws, tmp_path / "out", "1.0.0", "--private") == 0
    assert _push(ws, tmp_path / "out", "1.0.1") == 0
    assert hub.repos[("dataset", "aor/bench")].private
    assert "datasets/aor/bench (private) at commit" in capsys.readouterr().out.splitlines()[-1]


def test_private_flags_need_a_push(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    for flag in ("--private", "--make-private"):
        with pytest.raises(SystemExit) as exc:
            export_main(["--workspace", str(ws.root), "--out", str(tmp_path / "out"), flag])
        assert exc.value.code == 2
    assert not (tmp_path / "out").exists()
