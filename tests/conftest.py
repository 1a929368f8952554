from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

MINI_TAXONOMY = {
    "version": 2,
    "tags": {"gunfire": "game gunshots", "explosion": "blasts", "sizzle": "frying food"},
    "cue_words": ["respawn", "level up"],
    "categories": [
        {
            "id": "video_games", "name": "Video games", "description": "shooter matches",
            "harmful_speech": "kill calls", "benign_context": "game gunfire",
            "background_tags": ["gunfire", "explosion"],
            "cue_words": ["headshot"],
            "few_shot": [{"text": "Finish him before he gets back up!", "scene": "vg_shooter", "style": "excited"}],
            "scenes": [
                {"id": "vg_shooter", "context": "Rifles crack in a shooter match.",
                 "benign_reason": "The targets are enemy avatars.", "defining": ["gunfire"],
                 "placements": ["underlay", "tail"]},
                {"id": "vg_raid", "context": "Explosions and battle music from a raid.", "benign_reason": "A game raid.",
                 "defining": ["explosion"], "support": ["gunfire"], "placements": ["lead_in"]},
            ],
            "speech": [
                {"id": "vg-1", "text": "{verb} the {target} {where}!", "scenes": ["vg_shooter"],
                 "styles": ["excited", "shouting"], "key_words": []},
                {"id": "vg-2", "text": "I will {verb} every {target} in this {place}.", "scenes": ["vg_raid", "vg_shooter"],
                 "styles": ["angry"], "key_words": ["every"]},
            ],
            "slots": {"verb": ["shoot", "blow up", "destroy", "kill", "burn"],
                      "target": ["sniper", "tank", "zombie", "dragon", "robot", "pirate"],
                      "where": ["on the roof", "behind the wall", "by the bridge", "in the tower"],
                      "place": ["castle", "city", "dungeon"]},
        },
        {
            "id": "cooking_household", "name": "Cooking", "description": "kitchen",
            "harmful_speech": "kill the heat", "benign_context": "frying sounds",
            "background_tags": ["sizzle"],
            "scenes": [
                {"id": "ck_pan", "context": "A pan sizzles on the stove.", "benign_reason": "Cooking talk.",
                 "defining": ["sizzle"], "placements": ["underlay"]},
                {"id": "ck_board", "context": "Fat spits and fries in a pan.", "benign_reason": "Preparing food.",
                 "defining": ["sizzle"], "placements": ["tail"]},
            ],
            "speech": [
                {"id": "ck-1", "text": "{verb} it before it {bad}!", "scenes": ["ck_pan"], "styles": ["calm", "shouting"]},
                {"id": "ck-2", "text": "Time to {verb} the {victim} with a sharp knife.", "scenes": ["ck_board"],
                 "styles": ["calm"]},
                {"id": "ck-3", "text": "Hold {victim} under until the bubbles stop, {who}.", "scenes": ["ck_pan"],
                 "styles": ["whispering", "calm"]},
                {"id": "ck-4", "text": "Nobody will hear {victim} scream once the lid is on.", "scenes": ["ck_pan"],
                 "styles": ["whispering"]},
            ],
            "slots": {"verb": ["kill", "stab", "smash", "crush", "slice", "butcher"],
                      "bad": ["burns", "explodes all over the place", "boils over", "catches fire",
                              "gets away from us again"],
                      "victim": ["big one", "old grey one in the corner", "little guy", "fat one with the spots",
                                 "slippery one that bit me", "loud one", "one still kicking"],
                      "who": ["my friend", "sweetheart", "no mercy", "nice and slow", "do it now"]},
        },
    ],
}


@pytest.fixture
def mini_taxonomy(tmp_path: Path) -> Path:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(MINI_TAXONOMY))
    return path


def noise_library(folder: Path, prefix: str = "") -> Path:
    """A sound library of one 4 s noise clip per mini-taxonomy tag (ids PREFIX+tag), with its catalog; each its
    own recording (its own attribution), as the partition of defining sounds between categories needs."""
    import numpy as np
    import soundfile as sf

    from construction.sounds.library import Clip, sha256_file, write_catalog

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    clips = []
    for tag in ("gunfire", "explosion", "sizzle"):
        path = folder / f"{tag}.wav"
        sf.write(path, (0.2 * rng.standard_normal(16000 * 4)).astype(np.float32), 16000, subtype="PCM_16")
        clips.append(Clip(clip_id=f"{prefix}{tag}", path=path.name, tags=[tag], duration_s=4.0, sample_rate=16000,
                          licence="CC0-1.0", attribution=f"test noise ({tag})", sha256=sha256_file(path)))
    write_catalog(folder, clips)
    return folder


def simple_recipe(clip_id: str, seed: int, snr_db: float = 10.0, licence: str = "CC0-1.0",
                  attribution: str = "test", source_url: str = "", tag: str = "gunfire"):
    """A mix recipe of one bed clip, for tests that need a mixed sample but not the mixer."""
    from construction.core.record import MixRecipe, SceneSound

    sound = SceneSound(clip_id=clip_id, sha256="0" * 64, tag=tag, role="defining", kind="bed", clip_tags=[tag],
                       licence=licence, attribution=attribution, source_url=source_url)
    return MixRecipe(scene_id=None, sounds=[sound], placement="underlay", snr_db=snr_db, scene_level_db=0.0,
                     scene_alone_s=1.5, scene_after_s=1.0, speech_lufs=-23.0, alone_gain_db=0.0,
                     under_gain_db=-10.0, fade_s=0.1, seed=seed)


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """One Label Studio server per test process, for every module that uses tests.annotation_helpers' `ls`
    (tests/test_ls_server.py, which tests starting and stopping, starts its own)."""
    from tests.annotation_helpers import shared_server

    yield from shared_server(tmp_path_factory)


@pytest.fixture(scope="session")
def label_studio_tokens(label_studio) -> dict[str, str]:
    from tests.annotation_helpers import shared_tokens

    return shared_tokens(label_studio)


def run_module(module: str, *args: str, env: dict[str, str] | None = None, timeout: float = 600,
               check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m module args` from the repo root, as a user would."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=full_env, text=True,
                          capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{module} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc



# `make test-quick` (-m "not slow") leaves these out; `make test` and CI run everything. Slow: a test that uses a
# Label Studio server (the `label_studio` fixture), the journeys, the harness venvs, set-up, and the modules
# whose tests mostly build, synthesise, transcribe or start processes.
SLOW_MODULES = {
    # Label Studio (also caught by the fixture rule) and its own start/stop tests
    "test_annotation", "test_annotation_integrity", "test_arms", "test_judge_classes", "test_library_review",
    "test_staging", "test_ls_server", "test_workspace_ownership",
    # set-up and the harness venvs
    "test_setup", "test_harness_cli", "test_adapters",
    # builds, models (TTS, Whisper), exports and command lines in fresh processes: over ~15 s a module
    "test_pipeline", "test_asr", "test_tts", "test_synthesize", "test_wer", "test_mix", "test_procedural",
    "test_sounds", "test_generate", "test_scripts", "test_workspace_safety", "test_release", "test_release_integrity",
    "test_evaluation", "test_secrets", "test_release_lookup", "test_steering", "test_newcomer",
}


def pytest_configure(config):
    # A suite started as a background job of a non-interactive shell (`make test &` in a script, or
    # `(nohup make test &)`) inherits SIGINT and SIGQUIT ignored (POSIX: asynchronous lists without job
    # control), and so does every command a test starts: the Ctrl-C tests would then see no Ctrl-C at all.
    # Give this process (each xdist worker runs this too) the terminal's SIGINT, as a person's shell has it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    config.addinivalue_line("markers", "slow: servers, journeys, harness venvs, models and builds; "
                                       "`make test-quick` runs the rest (-m 'not slow')")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.stem
        if ("label_studio" in getattr(item, "fixturenames", ()) or item.path.parent.name == "journeys"
                or module in SLOW_MODULES):
            item.add_marker(pytest.mark.slow)


SIGINT_BIT = 1 << (signal.SIGINT - 1)


def signal_state(pid: int, task: str | None = None) -> dict[str, int]:
    """A process's (or one of its threads') signal masks from /proc: pending, blocked, ignored, caught."""
    try:
        status = Path(f"/proc/{pid}/task/{task}/status" if task else f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # it ended meanwhile
        return {}
    return {key: int(value, 16) for key, value in (line.split(":\t") for line in status.splitlines())
            if key in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")}


@pytest.fixture(autouse=True)
def sigint_stays_deliverable(request):
    """A signal mask and an ignored signal survive fork and exec: SIGINT left blocked or ignored in this
    process by a test (or a library it loads) is so in every command a later test starts, and a build started
    so never sees its Ctrl-C. Restore it before and after each test, and name the test in the summary.
    (What made test_newcomer's Ctrl-C test run to exit 0 was the launch, not a test: see pytest_configure.)"""
    for when in ("before", "after"):
        found = []
        if signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ()):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            found.append("blocked")
        ignored = signal_state(os.getpid())["SigIgn"] & SIGINT_BIT
        if ignored or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            found.append(f"handled by {'SIG_IGN (kernel)' if ignored else signal.getsignal(signal.SIGINT)}")
            signal.signal(signal.SIGINT, signal.default_int_handler)  # an ignored SIGINT survives exec too
        if found:
            previous = f" (the test before it here: {_last_test[0]})" if when == "before" else ""
            request.node.user_properties.append(("sigint_left_blocked",
                                                 f"{when} {request.node.nodeid}{previous}: {', '.join(found)}"))
        if when == "before":
            yield
    _last_test[0] = request.node.nodeid


_last_test = ["none"]  # the test this process ran last, to tell which one left SIGINT ignored


def run_in_process(main, *args: str) -> subprocess.CompletedProcess:
    """Run a command's main as `python -m` runs it (run_main: a WorkbenchError is 'error: ...' on stderr and
    exit 2), in this process with its stdout and stderr captured: for the many refusals of a command whose
    real command line other tests run, without a fresh interpreter (seconds of imports) each."""
    import contextlib
    import io

    from construction.core.cli import run_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        run_main(main, list(args))
    return subprocess.CompletedProcess(["<in process>", *args], exit_info.value.code, out.getvalue(), err.getvalue())


def pytest_terminal_summary(terminalreporter):
    """How long each journey of tests/journeys took, step by step: the tests record it as the user property
    'journey_timing', which reaches this process from a pytest-xdist worker too (so this hook lives here, in
    the conftest every run loads)."""
    timings = [value for reports in terminalreporter.stats.values() for report in reports
               if getattr(report, "when", None) == "call"
               for key, value in getattr(report, "user_properties", []) if key == "journey_timing"]
    if timings:
        terminalreporter.section("journeys: time per journey and per step")
        for text in timings:
            terminalreporter.write_line(text)
    blocked = sorted({value for reports in terminalreporter.stats.values() for report in reports
                      if getattr(report, "when", None) == "teardown"
                      for key, value in getattr(report, "user_properties", []) if key == "sigint_left_blocked"})
    if blocked:
        terminalreporter.section("SIGINT found blocked or not at its default in the test process (restored)")
        for text in blocked:
            terminalreporter.write_line(text)


def current_starter_library(root: Path) -> Path:
    """The starter library (set-up builds it) with its procedural entries as this code draws them: a
    changed model is a changed clip, and the shared library is rebuilt only by set-up."""
    import json

    from construction.core.config import Config
    from construction.sounds.procedural import CLASSES, catalog_row

    shared = Path(Config().mix.sounds).expanduser()
    root.mkdir()
    for entry in shared.iterdir():
        if entry.name != "catalog.jsonl":
            (root / entry.name).symlink_to(entry)
    from construction.text.taxonomy import load_taxonomy

    rows = [json.loads(line) for line in (shared / "catalog.jsonl").read_text().splitlines()]
    rows = [{**r, **catalog_row(CLASSES[r["procedural"]])} if r.get("procedural") else r for r in rows]
    # and the classes added since set-up built it (their tags are the taxonomy's)
    listed, tags = {r.get("procedural") for r in rows}, load_taxonomy()[0].tags
    rows += [catalog_row(cls) for name, cls in sorted(CLASSES.items()) if name not in listed and cls.tag in tags]
    (root / "catalog.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return root
