"""scripts/library_sheets.py: every clip of a library on contact sheets, with numbers that mean what they say."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

from construction.sounds.library import Clip, sha256_file, write_catalog

ROOT = Path(__file__).resolve().parents[1]
SR = 16000


def _sheets():
    spec = importlib.util.spec_from_file_location("library_sheets", ROOT / "scripts" / "library_sheets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_numbers_measure_what_they_name():
    sheets = _sheets()
    rng = np.random.default_rng(1)
    noise = rng.standard_normal(2 * 44100)
    # white noise at 44.1 kHz fills the band; the same noise at 11.025 kHz stops at its 5.5 kHz Nyquist
    assert sheets.band_limit(noise, 44100) > 20000
    assert 5000 < sheets.band_limit(rng.standard_normal(2 * 11025), 11025) <= 5512.5
    # a low-passed noise: the limit sits where the spectrum falls 40 dB under its peak, not at Nyquist
    from scipy import signal
    low = signal.sosfilt(signal.butter(8, 1000, fs=44100, output="sos"), noise)
    assert 1000 < sheets.band_limit(low, 44100) < 3000
    # five clicks half a second apart in silence: five onsets; a steady tone: none after its start
    clicks = np.zeros(3 * SR)
    clicks[[int(SR * (0.25 + 0.5 * k)) for k in range(5)]] = 1.0
    assert sheets.onset_count(clicks) == 5
    tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(2 * SR) / SR)
    assert sheets.onset_count(tone) <= 1
    m = sheets.measures(tone.astype(np.float32), tone, SR)
    assert 400 < m["centroid_hz"] < 480 and m["low_250_share"] < 0.01 and m["high_2k_share"] < 0.01


def _library(root: Path) -> Path:
    rng = np.random.default_rng(2)
    root.mkdir()
    clips = []
    for clip_id, tag, rate, audio in (
            ("hiss", "sizzle", 44100, 0.1 * rng.standard_normal(3 * 44100)),
            ("lofi", "explosion", 11025, 0.3 * rng.standard_normal(11025) * np.exp(-np.arange(11025) / 2000))):
        sf.write(root / f"{clip_id}.wav", audio.astype(np.float32), rate, subtype="PCM_16")
        clips.append(Clip(clip_id=clip_id, path=f"{clip_id}.wav", tags=[tag], duration_s=len(audio) / rate,
                          sample_rate=rate, licence="CC0-1.0", attribution=f"{clip_id} by tests",
                          sha256=sha256_file(root / f"{clip_id}.wav"), kind="event"))
    write_catalog(root, clips)
    return root


def test_the_command_writes_a_sheet_and_the_measures(tmp_path):
    library = _library(tmp_path / "lib")
    out = tmp_path / "out"
    (out / "sheet-07.png").parent.mkdir()
    (out / "sheet-07.png").write_bytes(b"left over from a bigger library")
    proc = subprocess.run([sys.executable, "scripts/library_sheets.py", "--sounds", str(library), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["measures.csv", "sheet-01.png"]  # the stale sheet is gone
    assert (out / "sheet-01.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = {r["clip_id"]: r for r in csv.DictReader((out / "measures.csv").open())}
    assert set(rows) == {"hiss", "lofi"} and rows["lofi"]["native_rate"] == "11025"
    assert float(rows["lofi"]["band_limit_hz"]) <= 5512.5 < float(rows["hiss"]["band_limit_hz"])


def test_bad_input_is_an_error_not_a_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "scripts/library_sheets.py", "--sounds", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: no sound library at")
    library = _library(tmp_path / "lib")
    proc = subprocess.run([sys.executable, "scripts/library_sheets.py", "--sounds", str(library), "--out",
                           str(tmp_path / "out"), "--clip", "nope"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "error: --clip: no clip nope" in proc.stderr
