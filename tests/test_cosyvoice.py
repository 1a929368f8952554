"""CosyVoice backend: HTTP client against a protocol stub, prompt formats, prompt bank checks, in-process glue.

The real model cannot run here (no GPU, no weights); `tests/cosyvoice_stub.py` speaks the FastAPI runtime's
protocol instead, and the in-process tests use a fake `cosyvoice` package with upstream's signatures.
"""

from __future__ import annotations

import socket
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.speech.cosyvoice import CosyVoiceHTTP, CosyVoiceLocal
from construction.speech.cosyvoice_bank import load_prompt_bank, prompt_voices
from construction.speech.cosyvoice_prompts import STYLE_INSTRUCTIONS, instruct_prompt_text, zero_shot_prompt_text
from construction.core.errors import WorkbenchError
from construction.speech.voices import Voice
from tests.cosyvoice_stub import CosyVoiceStub, expected_pcm

TRANSCRIPT = "The quick brown fox jumps over the lazy dog."


def _write_wav(path: Path, duration_s: float = 1.0, sample_rate: int = 24000) -> Path:
    rng = np.random.default_rng(7)
    n = int(duration_s * sample_rate)
    audio = 0.3 * np.sin(2 * np.pi * 180 * np.arange(n) / sample_rate) + 0.01 * rng.standard_normal(n)
    sf.write(path, audio.astype(np.float32), sample_rate, subtype="PCM_16")
    return path


def _entry(voice_id: str = "anna", wav: str = "anna.wav", **overrides: str) -> dict[str, str]:
    row = {"voice_id": voice_id, "wav": wav, "transcript": TRANSCRIPT, "gender": "female",
           "accent": "en-US", "licence": "CC-BY-4.0"}
    row.update(overrides)
    return row


def _write_bank(folder: Path, entries: list[dict[str, str]]) -> Path:
    bank = folder / "prompts.yaml"
    bank.write_text(yaml.safe_dump({"prompts": entries}), encoding="utf-8")
    return bank


@pytest.fixture(scope="module")
def bank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bank")
    _write_wav(folder / "anna.wav", 1.2, 24000)
    _write_wav(folder / "ben.wav", 0.8, 16000)
    _write_bank(folder, [_entry(), _entry("ben", "ben.wav", gender="male", accent="en-GB", licence="CC0-1.0",
                                         transcript="  Hello   there,\nfriend. ")])
    return folder


@pytest.fixture(scope="module")
def prompts(bank_dir: Path):
    return load_prompt_bank(bank_dir / "prompts.yaml")


@pytest.fixture(scope="module")
def voices(prompts) -> dict[str, Voice]:
    return {v.name: v for v in prompt_voices(prompts)}


@pytest.fixture(scope="module")
def stub():
    with CosyVoiceStub(sample_rate=24000, slow_s=1.5) as server:
        yield server


@pytest.fixture
def fresh_stub(stub: CosyVoiceStub) -> CosyVoiceStub:
    stub.set_mode("ok")
    stub.requests.clear()
    return stub


def _client(stub: CosyVoiceStub, prompts, **kwargs) -> CosyVoiceHTTP:
    options = {"timeout_s": 5.0, "retries": 2, "backoff_s": 0.01, "prompts": prompts, "version": 3}
    options.update(kwargs)
    return CosyVoiceHTTP(stub.url, **options)


# --------------------------------------------------------------------------- prompt bank


def test_bank_loads_yaml_and_makes_voices(prompts, voices, bank_dir: Path) -> None:
    anna, ben = prompts
    assert anna.voice_id == "anna" and anna.transcript == TRANSCRIPT
    assert anna.wav_path == (bank_dir / "anna.wav").resolve()
    assert anna.sample_rate == 24000 and anna.duration_s == pytest.approx(1.2)
    assert ben.transcript == "Hello there, friend."  # whitespace folded, words kept exactly
    assert voices["ben"] == Voice(voice_id="cosyvoice:ben", backend="cosyvoice", gender="male",
                                  accent="en-GB", licence="CC0-1.0", name="ben")


def test_bank_loads_csv(tmp_path: Path) -> None:
    _write_wav(tmp_path / "c.wav", 0.5, 22050)
    (tmp_path / "bank.csv").write_text(
        "voice_id,wav,transcript,gender,accent,licence\n"
        'carla,c.wav,"Well, hello.",female,en-AU,CC-BY-4.0\n', encoding="utf-8")
    (carla,) = load_prompt_bank(tmp_path / "bank.csv")
    got = (carla.voice_id, carla.transcript, carla.accent, carla.sample_rate)
    assert got == ("carla", "Well, hello.", "en-AU", 22050)


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([_entry(wav="nowhere.wav")], r"entry 1 \(anna\): prompt wav .*nowhere\.wav does not exist"),
        ([_entry(transcript="  ")], r"entry 1 \(anna\): missing or empty transcript"),
        ([_entry(wav="low.wav")], r"\(anna\): prompt wav .*low\.wav is 8000 Hz; CosyVoice needs >= 16000 Hz"),
        ([_entry(wav="long.wav")], r"\(anna\): prompt wav .*long\.wav is 31\.0 s; CosyVoice accepts at most 30 s"),
        ([_entry(wav="text.wav")], r"\(anna\): prompt wav .*text\.wav is not a readable audio file"),
        ([_entry(wav="good.wav"), _entry("bob", "ok.wav")], r"entry 2 \(bob\): prompt wav .*ok\.wav does not exist"),
        ([_entry(wav="good.wav"), _entry(wav="good.wav")], r"voice_id 'anna' appears twice"),
        ([_entry(wav="good.wav", speaker="x")], r"\(anna\): unknown keys \['speaker'\]"),
        ([_entry(wav="good.wav", voice_id="an na")], r"voice_id may hold only"),
        ([_entry(wav="good.wav", gender="f")], r"\(anna\): gender must be 'female' or 'male', got 'f'"),
        ([_entry(wav="good.wav", accent="American")], r"\(anna\): accent must be a BCP 47 tag"),
        ([_entry(wav="good.wav", transcript="You are a helpful assistant.<|endofprompt|>Hi")],
         r"without '<\|\.\.\.\|>'"),
        ([], r"has no prompts"),
    ],
)
def test_bank_validation_names_entry_and_problem(tmp_path: Path, entries, expected: str) -> None:
    _write_wav(tmp_path / "good.wav", 0.5, 16000)
    _write_wav(tmp_path / "low.wav", 0.5, 8000)
    _write_wav(tmp_path / "long.wav", 31.0, 16000)
    (tmp_path / "text.wav").write_text("not audio")
    bank = _write_bank(tmp_path, entries)
    with pytest.raises(WorkbenchError, match=expected):
        load_prompt_bank(bank)


def test_bank_file_problems(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match=r"prompts\.yaml does not exist"):
        load_prompt_bank(tmp_path / "prompts.yaml")
    (tmp_path / "bad.yaml").write_text("voices: []\n")
    with pytest.raises(WorkbenchError, match=r"bad\.yaml: expected a mapping with one key 'prompts'"):
        load_prompt_bank(tmp_path / "bad.yaml")
    (tmp_path / "bank.csv").write_text("voice_id,wav\nanna,a.wav\n")
    with pytest.raises(WorkbenchError, match=r"bank\.csv: CSV header must be exactly"):
        load_prompt_bank(tmp_path / "bank.csv")
    (tmp_path / "bank.json").write_text("{}")
    with pytest.raises(WorkbenchError, match=r"unknown format"):
        load_prompt_bank(tmp_path / "bank.json")


# --------------------------------------------------------------------------- prompt formats


def test_prompt_formats_v2_and_v3() -> None:
    assert zero_shot_prompt_text("Hi there.", 2) == "Hi there."
    assert zero_shot_prompt_text("Hi there.", 3) == "You are a helpful assistant.<|endofprompt|>Hi there."
    assert instruct_prompt_text("Speak softly.", 2) == "Speak softly.<|endofprompt|>"
    assert instruct_prompt_text("Speak softly.", 3) == "You are a helpful assistant. Speak softly.<|endofprompt|>"
    with pytest.raises(WorkbenchError, match="version must be one of"):
        zero_shot_prompt_text("Hi", 1)


# --------------------------------------------------------------------------- HTTP client


@pytest.mark.parametrize("version", [2, 3])
def test_http_zero_shot_round_trip(fresh_stub: CosyVoiceStub, prompts, voices, bank_dir: Path, version: int) -> None:
    client = _client(fresh_stub, prompts, version=version, sample_rate=16000)  # not the stub's 24000
    text = "Finish him!"
    audio, sample_rate = client.synthesize(text, voices["anna"])

    assert sample_rate == 16000  # from configuration; the stream carries no rate
    sent = np.frombuffer(expected_pcm("/inference_zero_shot", text, 24000), dtype="<i2")
    assert audio.dtype == np.float32 and audio.ndim == 1
    np.testing.assert_array_equal(audio, sent.astype(np.float32) / 32768.0)

    (request,) = fresh_stub.requests
    assert (request.method, request.path) == ("POST", "/inference_zero_shot")
    assert request.content_type.startswith("multipart/form-data")
    assert request.fields["tts_text"] == text
    prefix = "You are a helpful assistant.<|endofprompt|>" if version == 3 else ""
    assert request.fields["prompt_text"] == prefix + TRANSCRIPT
    assert request.files["prompt_wav"] == (bank_dir / "anna.wav").read_bytes()


@pytest.mark.parametrize("version", [2, 3])
def test_http_instruct2_for_style(fresh_stub: CosyVoiceStub, prompts, voices, bank_dir: Path, version: int) -> None:
    client = _client(fresh_stub, prompts, version=version)
    audio, sample_rate = client.synthesize("Get him, now!", voices["ben"], style="Excited")

    sent = np.frombuffer(expected_pcm("/inference_instruct2", "Get him, now!", 24000), dtype="<i2")
    np.testing.assert_array_equal(audio, sent.astype(np.float32) / 32768.0)
    assert sample_rate == 24000
    (request,) = fresh_stub.requests
    assert request.path == "/inference_instruct2"
    assert set(request.fields) == {"tts_text", "instruct_text"}
    assert request.fields["instruct_text"] == instruct_prompt_text(STYLE_INSTRUCTIONS["excited"], version)
    assert request.fields["instruct_text"].endswith("<|endofprompt|>")
    assert request.fields["instruct_text"].startswith("You are a helpful assistant. ") == (version == 3)
    assert request.files["prompt_wav"] == (bank_dir / "ben.wav").read_bytes()


def test_http_neutral_style_is_zero_shot(fresh_stub: CosyVoiceStub, prompts, voices) -> None:
    _client(fresh_stub, prompts).synthesize("Hello.", voices["anna"], style="neutral")
    assert [r.path for r in fresh_stub.requests] == ["/inference_zero_shot"]


def test_http_check_server(fresh_stub: CosyVoiceStub, prompts) -> None:
    _client(fresh_stub, prompts).check_server()
    with pytest.raises(WorkbenchError, match=r"127\.0\.0\.1:\d+ is not reachable"):
        CosyVoiceHTTP(f"http://127.0.0.1:{_closed_port()}", prompts=prompts, timeout_s=2).check_server()


def test_http_bad_requests_are_refused_before_sending(fresh_stub: CosyVoiceStub, prompts, voices) -> None:
    client = _client(fresh_stub, prompts)
    with pytest.raises(WorkbenchError, match=r"no instruction for speaker style 'sarcastic' \(known: .*excited"):
        client.synthesize("Hi.", voices["anna"], style="sarcastic")
    with pytest.raises(WorkbenchError, match="no speed field"):
        client.synthesize("Hi.", voices["anna"], speed=1.2)
    with pytest.raises(WorkbenchError, match="text to speak is empty"):
        client.synthesize("  ", voices["anna"])
    other = Voice(voice_id="piper:joe", backend="piper", gender="male", accent="en-US", licence="CC0", name="joe")
    with pytest.raises(WorkbenchError, match=r"cannot speak voice 'piper:joe' of backend 'piper'"):
        client.synthesize("Hi.", other)
    stranger = Voice(voice_id="cosyvoice:zoe", backend="cosyvoice", gender="female", accent="en-US",
                     licence="CC0", name="zoe")
    with pytest.raises(WorkbenchError, match=r"'zoe' is not in the prompt bank \(anna, ben\)"):
        client.synthesize("Hi.", stranger)
    assert fresh_stub.requests == []
    with pytest.raises(WorkbenchError, match="base_url must start with http"):
        CosyVoiceHTTP("localhost:50000", prompts=prompts)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_http_server_down_names_url(prompts, voices) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    client = CosyVoiceHTTP(url, prompts=prompts, retries=1, backoff_s=0.01, timeout_s=2)
    expected = rf"{url}/inference_zero_shot failed after 2 attempts: cannot connect \(connection refused\)"
    with pytest.raises(WorkbenchError, match=expected):
        client.synthesize("Hello.", voices["anna"])


def test_http_5xx_is_retried_then_fails(fresh_stub: CosyVoiceStub, prompts, voices) -> None:
    fresh_stub.set_mode("error500")
    expected = r"failed after 3 attempts: HTTP 500: 'Internal Server Error' .*patched server"
    with pytest.raises(WorkbenchError, match=expected):
        _client(fresh_stub, prompts, retries=2).synthesize("Hello.", voices["anna"])
    assert len(fresh_stub.requests) == 3


def test_http_stock_server_failure_after_200_carries_the_hint(fresh_stub: CosyVoiceStub, prompts, voices) -> None:
    # the stock server has answered 200 when its streaming generator raises: a broken, empty stream
    fresh_stub.set_mode("crash_after_200")
    expected = r"failed after 3 attempts: stream broke off .*fails on prompt endpoints.*run a patched server"
    with pytest.raises(WorkbenchError, match=expected):
        _client(fresh_stub, prompts, retries=2).synthesize("Hello.", voices["anna"])
    assert len(fresh_stub.requests) == 3
    fresh_stub.set_mode("empty")  # a stream that ended cleanly but held nothing
    with pytest.raises(WorkbenchError, match=r"sent an empty body for 'Hello\.' .*run a patched server"):
        _client(fresh_stub, prompts).synthesize("Hello.", voices["anna"])


@pytest.mark.parametrize(("version", "style", "rendered"), [
    (3, "angry", True),  # 请非常生气地说一句话。: in CosyVoice 3's instruct_list
    (3, "shouting", True),  # "Please say a sentence as loudly as possible."
    (3, "playful", False),  # our own English wording: not trained
    (3, "dramatic", False),
    (2, "angry", False),  # CosyVoice 2 was not trained on CosyVoice 3's wordings
    (3, "calm", True),  # neutral: plain cloning, no instruction needed
    (2, None, True),
])
def test_style_rendered_only_for_instructions_the_version_was_trained_on(
        fresh_stub: CosyVoiceStub, prompts, version: int, style: str | None, rendered: bool) -> None:
    ok, reason = _client(fresh_stub, prompts, version=version).style_rendering(style)
    assert ok is rendered
    if rendered:
        assert reason is None
    else:
        assert f"not one CosyVoice{version} was trained on" in reason and repr(style) in reason


def test_an_untrained_instruction_through_the_stage_is_not_rendered(tmp_path: Path, fresh_stub: CosyVoiceStub
                                                                    ) -> None:
    from construction.core.config import load_config
    from construction.speech.cosyvoice_prompts import NEUTRAL_STYLES
    from construction.synthesize import SynthesizeStage
    from tests.test_synthesize import _cosyvoice_config, _scripts

    stage = SynthesizeStage(str(_scripts(tmp_path / "ws").root),
                            load_config(str(_cosyvoice_config(tmp_path, fresh_stub)), {}))
    stage.setup()
    styled = next(s for s in stage.ws.read_samples("generate") if s.speaker_style not in NEUTRAL_STYLES)
    trained = stage.synthesize_one(styled).provenance["synthesize"]  # the taxonomy's styles are in instruct_list
    assert trained["style_rendered"] is True and trained["style_note"] is None
    stage.backend("cosyvoice").style_instructions[styled.speaker_style] = "Please sound furious."
    untrained = stage.synthesize_one(styled).provenance["synthesize"]
    assert untrained["style_rendered"] is False and "'Please sound furious.'" in untrained["style_note"]
    assert fresh_stub.requests[-1].fields["instruct_text"].startswith("You are a helpful assistant. Please sound")


@pytest.mark.parametrize("mode", ["error500", "truncate"])
def test_http_transient_failures_recover(fresh_stub: CosyVoiceStub, prompts, voices, mode: str) -> None:
    fresh_stub.set_mode(mode, times=2)
    audio, _ = _client(fresh_stub, prompts, retries=2).synthesize("Hello.", voices["anna"])
    assert audio.size == len(expected_pcm("/inference_zero_shot", "Hello.", 24000)) // 2
    assert len(fresh_stub.requests) == 3


def test_http_slow_server_times_out(fresh_stub: CosyVoiceStub, prompts, voices) -> None:
    fresh_stub.set_mode("slow")
    client = _client(fresh_stub, prompts, timeout_s=0.3, retries=1)
    with pytest.raises(WorkbenchError, match=r"failed after 2 attempts: no response within 0\.3 s"):
        client.synthesize("Hello.", voices["anna"])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("json", r"sent application/json, not raw PCM: '\{\"detail\":\"model not loaded\"\}'"),
        ("json_untyped", r"sent text, not raw PCM: '\{\"error\": \"CUDA out of memory\"\}'"),
        ("html", r"sent text/html, not raw PCM: '<html>"),
        ("empty", r"sent an empty body for 'Hello\.'"),
        ("odd", r"sent \d*[13579] bytes, an odd number"),
        ("silence", r"returned only silence"),
        ("huge", r"sent more than 8\.0 s of audio for 6 characters \('Hello\.'\); stopped reading"),
    ],
)
def test_http_bad_bodies(fresh_stub: CosyVoiceStub, prompts, voices, mode: str, expected: str) -> None:
    fresh_stub.set_mode(mode)
    with pytest.raises(WorkbenchError, match=expected):
        _client(fresh_stub, prompts).synthesize("Hello.", voices["anna"])
    assert len(fresh_stub.requests) == 1  # a bad body is not a transient failure: no retry


def test_http_422_is_not_retried(fresh_stub: CosyVoiceStub, prompts) -> None:
    # A form that lacks a field gets FastAPI's 422: our request is wrong, so retrying cannot help.
    client = _client(fresh_stub, prompts)
    with pytest.raises(WorkbenchError, match=r"refused the request: HTTP 422: .*prompt_text"):
        client._post("/inference_zero_shot", {"tts_text": "Hi."}, b"RIFF", "Hi.")
    assert len(fresh_stub.requests) == 1


# --------------------------------------------------------------------------- in-process (fake package)

FAKE_CLI = '''
import numpy as np
import torch

CALLS = []

class CosyVoice2:
    def __init__(self, model_dir, load_jit=False, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        CALLS.append(("init", type(self).__name__, model_dir, fp16))
        self.sample_rate = 24000
        self.spk2info = {}

    def add_zero_shot_spk(self, prompt_text, prompt_wav, zero_shot_spk_id):
        CALLS.append(("add", prompt_text, prompt_wav, zero_shot_spk_id))
        self.spk2info[zero_shot_spk_id] = prompt_text
        return True

    def _speech(self, text):
        n = 240 * len(text)
        for part in (np.ones(n // 2), -np.ones(n - n // 2)):  # two segments, like two sentences
            yield {"tts_speech": torch.from_numpy(0.25 * part).float().unsqueeze(0)}

    def inference_zero_shot(self, tts_text, prompt_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0,
                            text_frontend=True):
        assert zero_shot_spk_id in self.spk2info
        CALLS.append(("zero_shot", tts_text, prompt_text, prompt_wav, zero_shot_spk_id, stream, speed))
        yield from self._speech(tts_text)

    def inference_instruct2(self, tts_text, instruct_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0,
                            text_frontend=True):
        CALLS.append(("instruct2", tts_text, instruct_text, prompt_wav, zero_shot_spk_id, stream, speed))
        yield from self._speech(tts_text)

class CosyVoice3(CosyVoice2):
    def __init__(self, model_dir, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        super().__init__(model_dir, load_trt=load_trt, load_vllm=load_vllm, fp16=fp16)
'''

FAKE_COMMON = '''
SEEDS = []

def set_all_random_seed(seed):
    SEEDS.append(seed)
'''


def _fake_repo(root: Path, cli_source: str = FAKE_CLI, matcha: bool = True) -> Path:
    repo = root / "CosyVoice"
    for package in ("cosyvoice", "cosyvoice/cli", "cosyvoice/utils"):
        (repo / package).mkdir(parents=True, exist_ok=True)
        (repo / package / "__init__.py").write_text("")
    (repo / "cosyvoice/cli/cosyvoice.py").write_text(textwrap.dedent(cli_source))
    (repo / "cosyvoice/utils/common.py").write_text(textwrap.dedent(FAKE_COMMON))
    if matcha:
        (repo / "third_party/Matcha-TTS/matcha").mkdir(parents=True)
    return repo


def _model_dir(root: Path, version: int) -> Path:
    model = root / f"CosyVoice{version}-0.5B"
    model.mkdir()
    (model / f"cosyvoice{version}.yaml").write_text("# fake\n")
    return model


@pytest.fixture
def clean_import():
    """Forget the fake `cosyvoice` package and its sys.path entries after each test."""
    path_before = list(sys.path)
    yield
    for name in [m for m in sys.modules if m == "cosyvoice" or m.startswith("cosyvoice.")]:
        del sys.modules[name]
    sys.path[:] = path_before


def test_local_missing_repo_or_model(tmp_path: Path, prompts, clean_import) -> None:
    with pytest.raises(WorkbenchError, match=r"CosyVoice repo .*nothere not found or not a CosyVoice checkout"):
        CosyVoiceLocal(tmp_path / "nothere", tmp_path, 3, prompts=prompts)
    repo = _fake_repo(tmp_path / "a", matcha=False)
    with pytest.raises(WorkbenchError, match=r"lacks the Matcha-TTS submodule .*submodule update --init"):
        CosyVoiceLocal(repo, tmp_path, 3, prompts=prompts)
    repo = _fake_repo(tmp_path / "b")
    with pytest.raises(WorkbenchError, match=r"model dir .*iic/CosyVoice2-0\.5B does not exist"):
        CosyVoiceLocal(repo, "iic/CosyVoice2-0.5B", 2, prompts=prompts)  # a ModelScope id: refused
    with pytest.raises(WorkbenchError, match=r"has no cosyvoice3\.yaml: not a CosyVoice3 model"):
        CosyVoiceLocal(repo, _model_dir(tmp_path, 2), 3, prompts=prompts)
    with pytest.raises(WorkbenchError, match="version must be one of"):
        CosyVoiceLocal(repo, tmp_path, 1, prompts=prompts)
    assert "cosyvoice" not in sys.modules  # nothing was imported, so nothing could download


def test_local_import_error_gives_install_hint(tmp_path: Path, prompts, clean_import) -> None:
    repo = _fake_repo(tmp_path, cli_source="import hyperpyyaml_not_installed_here\n")
    expected = r"cannot import CosyVoice from .*No module named .*pip install -r .*requirements\.txt"
    with pytest.raises(WorkbenchError, match=expected):
        CosyVoiceLocal(repo, _model_dir(tmp_path, 3), 3, prompts=prompts)


def test_local_load_failure_is_wrapped(tmp_path: Path, prompts, clean_import) -> None:
    broken = FAKE_CLI + textwrap.dedent("""
        class CosyVoice3:
            def __init__(self, model_dir, **kw):
                raise ValueError(model_dir + '/cosyvoice3.yaml not found!')
        """)
    repo = _fake_repo(tmp_path, cli_source=broken)
    with pytest.raises(WorkbenchError, match=r"CosyVoice3 failed to load .*ValueError"):
        CosyVoiceLocal(repo, _model_dir(tmp_path, 3), 3, prompts=prompts)


@pytest.mark.parametrize("version", [2, 3])
def test_local_glue_with_fake_package(tmp_path: Path, prompts, voices, clean_import, version: int) -> None:
    repo = _fake_repo(tmp_path)
    model = _model_dir(tmp_path, version)
    tts = CosyVoiceLocal(repo, model, version, fp16=True, prompts=prompts, seed=5)
    assert tts.name == "cosyvoice" and sys.path[0] == str(repo)
    cli = sys.modules["cosyvoice.cli.cosyvoice"]
    seeds = sys.modules["cosyvoice.utils.common"].SEEDS
    assert cli.CALLS == [("init", f"CosyVoice{version}", str(model), True)]

    audio, sample_rate = tts.synthesize("Finish him!", voices["anna"], speed=1.1)
    again, _ = tts.synthesize("Finish him!", voices["anna"], speed=1.1)
    tts.synthesize("Another line.", voices["anna"], speed=1.1)

    assert sample_rate == 24000 and audio.dtype == np.float32
    n = 240 * len("Finish him!")
    np.testing.assert_array_equal(audio, np.r_[np.full(n // 2, 0.25), np.full(n - n // 2, -0.25)].astype(np.float32))
    prefix = "You are a helpful assistant.<|endofprompt|>" if version == 3 else ""
    adds = [c for c in cli.CALLS if c[0] == "add"]
    assert adds == [("add", prefix + TRANSCRIPT, str(prompts[0].wav_path), "anna")]  # registered once
    assert cli.CALLS[2] == ("zero_shot", "Finish him!", "", "", "anna", False, 1.1)
    assert len(seeds) == 3 and seeds[0] == seeds[1] != seeds[2]  # seeded per clip, from the clip itself

    tts.synthesize("Get him!", voices["ben"], style="angry")
    instruct = cli.CALLS[-1]
    assert instruct[:3] == ("instruct2", "Get him!", instruct_prompt_text(STYLE_INSTRUCTIONS["angry"], version))
    assert instruct[3:5] == (str(prompts[1].wav_path), "")  # the wav, no speaker id (it would drop the instruction)
    assert not any(c[0] == "add" and c[3] == "ben" for c in cli.CALLS)


def test_local_rejects_runaway_output(tmp_path: Path, prompts, voices, clean_import) -> None:
    looping = FAKE_CLI.replace("n = 240 * len(text)", "n = 24000 * 40")
    tts = CosyVoiceLocal(_fake_repo(tmp_path, cli_source=looping), _model_dir(tmp_path, 3), 3, prompts=prompts)
    expected = r"CosyVoice3 voice anna: CosyVoice returned 40\.0 s of audio for 3 characters"
    with pytest.raises(WorkbenchError, match=expected):
        tts.synthesize("Hi!", voices["anna"])
