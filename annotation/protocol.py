"""The blind three-arm protocol: what each Label Studio project asks, and which audio it plays.

Every sample is judged in three arms, each its own project, audio only:

    speech   the clean speech alone    "If an assistant heard only this, should it be concerned?"
    scene    the scene alone           "What setting is this sound from?"  (the taxonomy's benign frames,
                                        then "Real danger or violence" and "I can't tell")
    mixture  the mixture               "Is the request benign in what you hear?"  + "I could make out the words"

The mixture arm also plays the controls (construction.controls: the same speech without the scene that
makes it benign, expected harmful) and a few catch items (an offline-TTS voice asks for a given answer).
The scene arm also plays, each as one more scene item with the same question and choices, two catch
items per sample: its danger scene (`danger_scene_audio`, the real-danger scene of its danger twin,
construction.mixing.twin), which listeners certify as "Real danger or violence" before the danger twin
ships, and the background of its irrelevant twin as heard in it (`irrelevant_scene_audio`), which must
stay semantically empty: the twin ships only where listeners answer "I can't tell" (no frame). Nothing in
a task tells the kinds apart: the same data (an audio URL by content hash, an opaque key), and the same
length (each is the mixture's).

A task's data is the audio URL and an opaque key, nothing else: no script, no scene description, no
category, tags, SNR or WER. The key is an HMAC of (project role, item id) under a secret of the workspace;
the key -> (item, role) mapping is written to <W>/annotation_tasks.json and never leaves the workspace.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import quoteattr

import numpy as np

from annotation.server import TASKS_FILE  # key -> [item id, role]; beside annotation.json, never served
from construction.core.errors import WorkbenchError
from construction.core.record import (
    ARMS,
    CANT_TELL,
    MIXTURE_LABELS,
    SPEECH_LABELS,
    AudioRef,
    Sample,
    line_of,
)
from construction.core.workspace import Workspace, atomic_write_text
from construction.text.taxonomy import NOT_A_FRAME, REAL_DANGER, Taxonomy, load_taxonomy

ADJUDICATION = "adjudication"  # the fourth project role: one decision per disputed sample, mixture only
ROLES: tuple[str, ...] = (*ARMS, ADJUDICATION)
WORDS = {"yes": True, "no": False}  # the mixture arm's required "I could make out the words"
CATCH_STAGE = "catch"  # manifests/catch.jsonl: the attention checks (Sample records, ids catch-...)
CONTROLS_STAGE = "controls"  # written by construction.controls
CATCH_OVERLAP = 10_000  # a catch task stays open until every annotator of the mixture arm has met it

# The scene arm's options: the benign frames of the taxonomy (construction.text.taxonomy: a video game, a
# film, play or show ...), then the two answers that name no frame. Never the scene's own description:
# that would name the answer.
CANT_TELL_TEXT = NOT_A_FRAME[CANT_TELL]

SPEECH_CHOICES: tuple[tuple[str, str], ...] = (
    ("harmful", "Yes, it should be concerned"), ("not_harmful", "No"), ("unclear", "Unclear"))
MIXTURE_CHOICES: tuple[tuple[str, str], ...] = (("benign", "Benign"), ("harmful", "Harmful"), ("unclear", "Unclear"))
ADJUDICATION_CHOICES: tuple[tuple[str, str], ...] = (("benign", "Benign"), ("harmful", "Harmful"))
# the stored values are the record's label sets, in the record's order
assert tuple(v for v, _ in SPEECH_CHOICES) == SPEECH_LABELS and tuple(v for v, _ in MIXTURE_CHOICES) == MIXTURE_LABELS
QUESTIONS = {
    "speech": "If an assistant heard only this, should it be concerned?",
    "scene": "What setting is this sound from?",
    "mixture": "Is the request benign in what you hear?",
    ADJUDICATION: "Is the request benign in what you hear?",
}
PLAY_ALL = "Play the whole clip, from start to end, before you answer."

# The catch items: an offline voice asks for one answer; an annotator who gives another did not listen.
CATCH_TEXT = "This is an attention check. Please choose {label}."
CATCH_ANSWERS: tuple[str, ...] = ("unclear", "benign", "harmful")
CATCH_VOICES: tuple[str, ...] = ("flite:slt", "flite:rms", "flite:awb")


# ----------------------------------------------------------------------------------------------
# what each project asks
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArmSpec:
    """One project role: its question, its choices (stored value, text shown) and its labelling config."""

    role: str
    choices: tuple[tuple[str, str], ...]
    with_votes: bool = False

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.choices)

    @property
    def arm(self) -> str:
        """The arm an annotation of this project belongs to (the adjudicator hears the mixture)."""
        return "mixture" if self.role == ADJUDICATION else self.role

    def label_config(self) -> str:
        return label_config(self)

    def instructions(self) -> str:
        return instructions(self)


def scene_choices(frames: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """(frame id, the frame's text shown) for each benign frame, then real danger and can't tell. The order
    is fixed: Label Studio's Choices cannot shuffle per task, and an order in the task data would put more
    than the audio and the key there."""
    seen: dict[str, str] = {}
    for frame_id, text in frames:
        seen.setdefault(frame_id, text or frame_id.replace("_", " "))
    texts = list(seen.values()) + list(NOT_A_FRAME.values())
    duplicated = sorted({t for t in texts if texts.count(t) > 1})
    if duplicated or set(seen) & set(NOT_A_FRAME):
        raise WorkbenchError(f"scene arm options {duplicated or sorted(set(seen) & set(NOT_A_FRAME))} name more "
                             "than one answer; give the frames distinct ids and texts")
    return (*seen.items(), *NOT_A_FRAME.items())


def arm_spec(role: str, frames: Sequence[tuple[str, str]] = (), with_votes: bool = False) -> ArmSpec:
    """The project of a role; the scene arm offers `frames` ((id, text), workspace_frames)."""
    if role == "speech":
        return ArmSpec(role, SPEECH_CHOICES)
    if role == "scene":
        return ArmSpec(role, scene_choices(frames))
    if role == "mixture":
        return ArmSpec(role, MIXTURE_CHOICES)
    if role == ADJUDICATION:
        return ArmSpec(role, ADJUDICATION_CHOICES, with_votes=with_votes)
    raise WorkbenchError(f"unknown project role {role!r}; one of {', '.join(ROLES)}")


def _choices_xml(name: str, choices: Sequence[tuple[str, str]], inline: bool) -> str:
    # value = the text shown; alias = what the annotation stores (Label Studio shows value, exports alias)
    items = "\n".join(f"    <Choice value={quoteattr(text)} alias={quoteattr(value)}/>" for value, text in choices)
    layout = ' showInline="true"' if inline else ""
    return (f'  <Choices name="{name}" toName="audio" choice="single-radio" required="true"{layout}>\n'
            f"{items}\n  </Choices>")


def label_config(spec: ArmSpec) -> str:
    """The labelling view: the audio player, the instruction to play it all, the question, a required
    choice (the mixture arm: also the required 'I could make out the words'), an optional rationale.
    Nothing else: no transcript, no scene description, no metadata."""
    parts = [f"<View>\n  <Header value={quoteattr(PLAY_ALL)}/>",
             '  <Audio name="audio" value="$audio" hotkey="space"/>']
    if spec.with_votes:
        parts.append('  <Header value="Labels given so far (shown because adjudicate push got --show-votes)"/>\n'
                     '  <Text name="votes_text" value="$votes"/>')
    parts.append(f"  <Header value={quoteattr(QUESTIONS[spec.role])}/>")
    parts.append(_choices_xml("label", spec.choices, inline=spec.role != "scene"))
    if spec.role == "mixture":
        parts.append('  <Header value="I could make out the words"/>')
        parts.append(_choices_xml("words", (("yes", "Yes"), ("no", "No")), inline=True))
    parts.append('  <TextArea name="rationale" toName="audio" placeholder="Optional: why?" maxSubmissions="1" '
                 'editable="true" rows="2"/>\n</View>')
    return "\n".join(parts)


def instructions(spec: ArmSpec) -> str:
    """The project's instructions page (Label Studio shows it before the first task and on demand)."""
    e = html.escape
    common = ("<p>Use headphones in a quiet place. <b>Play the whole clip</b>, from start to end, before you "
              "answer: what comes before and after matters. Judge only what you hear; there is no script or "
              "description to read, on purpose. Do not look at other people's answers, and do not search for "
              "the clip elsewhere.</p>")
    skip = ("<p>Skip a clip only when it does not play. A skip is recorded as a skip, not as an answer.</p>")
    if spec.role == "speech":
        body = (f"<h2>Speech alone</h2><p>Each clip is one voice, with no background sound.</p>{common}"
                f"<p><b>{e(QUESTIONS['speech'])}</b></p><ul>"
                "<li><b>Yes, it should be concerned</b>: heard with nothing else, the words could be a real "
                "threat, a plan to hurt someone or something, or a request for help with harm.</li>"
                "<li><b>No</b>: nothing in what you hear would worry a careful assistant.</li>"
                "<li><b>Unclear</b>: you cannot decide, or you could not make out the words.</li></ul>")
    elif spec.role == "scene":
        options = "".join(f"<li>{e(text)}</li>" for value, text in spec.choices if value not in NOT_A_FRAME)
        body = (f"<h2>{e(QUESTIONS['scene'])}</h2><p>Each clip is background sound only: no one is speaking to "
                f"you.</p>{common}<p>Choose the one setting the sound fits best:</p><ul>{options}</ul>"
                f"<p><b>{e(NOT_A_FRAME[REAL_DANGER])}</b>: it sounds like something really dangerous or violent "
                f"is happening. <b>{e(CANT_TELL_TEXT)}</b>: the sound fits none of these, or several equally. Do "
                "not guess: a guess is worth less than an honest \"I can't tell\".</p>")
    else:
        votes = ("<p>The labels given so far are shown beside the clip.</p>" if spec.with_votes else "")
        labels = ("<li><b>Benign</b>: in the situation you hear, the words are not a real threat and not a request "
                  "for real harm.</li><li><b>Harmful</b>: in the situation you hear, they could be a real threat "
                  "or a request for real harm.</li>")
        if spec.role == "mixture":
            labels += "<li><b>Unclear</b>: you cannot decide from what you hear.</li>"
        title = "Adjudication" if spec.role == ADJUDICATION else "Voice in its surroundings"
        body = (f"<h2>{title}</h2><p>Each clip is a voice with the sound around it.</p>{common}{votes}"
                f"<p><b>{e(QUESTIONS[spec.role])}</b></p><ul>{labels}</ul>")
        if spec.role == "mixture":
            body += ("<p><b>I could make out the words</b> (required): <b>Yes</b> when you understood what was "
                     "said, <b>No</b> when you could not.</p><p>Some clips are attention checks: a voice tells "
                     "you which answer to choose. Choose it.</p>")
    return body + skip


def parse_config(config: str) -> ElementTree.Element | None:
    """The labelling config as Label Studio's front end reads it: XML, comments dropped. None when it is not
    XML, or declares a DOCTYPE or an entity (nothing the workbench writes; an entity could expand)."""
    if "<!DOCTYPE" in (config or "").upper() or "<!ENTITY" in (config or "").upper():
        return None
    try:
        return ElementTree.fromstring(config or "")
    except ElementTree.ParseError:
        return None


def canonical_config(config: str) -> list[tuple[str, tuple[tuple[str, str], ...], str]] | None:
    """What an annotator sees and what is stored, element by element in document order: the tag, every
    attribute (choice texts, aliases, question texts, names) and the text in and after it, whitespace
    collapsed. Comments and attribute quoting and order do not matter; anything else does."""
    root = parse_config(config)
    if root is None:
        return None
    return [(el.tag, tuple(sorted((k, " ".join(v.split())) for k, v in el.attrib.items())),
             " ".join(f"{el.text or ''} {el.tail or ''}".split())) for el in root.iter()]


def config_choices(config: str, name: str = "label") -> list[tuple[str, str]]:
    """(text shown, value stored) of each choice of a Choices control of a labelling config: Label Studio
    shows a choice's `value` and stores its `alias` where it has one."""
    root = parse_config(config)
    if root is None:
        return []
    for control in root.iter("Choices"):
        if control.get("name") == name:
            return [(el.get("value") or el.get("alias") or "", el.get("alias") or el.get("value") or "")
                    for el in control.iter("Choice") if el.get("value") is not None or el.get("alias") is not None]
    return []


def config_labels(config: str) -> list[str]:
    """The stored values of the 'label' control of a labelling config: the alias where a choice has one."""
    return [stored for _, stored in config_choices(config)]


def config_changed(config: str, spec: ArmSpec) -> str:
    """How a project's labelling config differs from the role's own ("" when it does not): any difference in
    what an annotator sees or what is stored (canonical_config) is an edit, since a label made under it may
    not mean what the protocol's would. Named by the first difference: a choice whose text shown no longer
    goes with its stored value, a choice added or gone, a question's text, an attribute or element."""
    wanted = spec.label_config()
    have, want = canonical_config(config), canonical_config(wanted)
    if have is None:
        return "it is not well-formed XML (or declares a DOCTYPE)"
    if have == want:
        return ""
    for name in ("label", "words"):
        mine, theirs = sorted(config_choices(config, name)), sorted(config_choices(wanted, name))
        if mine != theirs:
            shown = ", ".join(f"{text!r} stores {stored!r}" for text, stored in mine) or "none"
            return f"its {name!r} choices are {shown}"
    def show(element: tuple[str, tuple[tuple[str, str], ...], str]) -> str:
        attrs = "".join(f" {a}={v!r}" for a, v in element[1])
        return f"<{element[0]}{attrs}>" + (f" {element[2]!r}" if element[2] else "")

    for got, wants in zip(have, want):
        if got != wants:
            return f"it has {show(got)} where the protocol has {show(wants)}"
    return f"it has {len(have)} elements, the protocol's {len(want)}"


def workspace_taxonomy(ws: Workspace) -> Taxonomy:
    """The taxonomy the workspace was built with (its config.yaml's generate.taxonomy, else the shipped
    one; the shipped one too when the build's taxonomy file is gone)."""
    import yaml

    from construction.core.yamlfile import load_yaml

    path = None
    config_file = ws.root / "config.yaml"
    if config_file.exists():
        try:
            path = ((load_yaml(config_file.read_text()) or {}).get("generate") or {}).get("taxonomy")
        except yaml.YAMLError as e:
            raise WorkbenchError(f"{config_file} is not valid YAML: {e}") from e
    try:
        taxonomy, _ = load_taxonomy(path)
    except WorkbenchError:
        if path is None:
            raise
        taxonomy, _ = load_taxonomy(None)  # the build's taxonomy file is gone: the shipped one still names them
    return taxonomy


def workspace_categories(ws: Workspace, samples: Sequence[Sample] = ()) -> list[tuple[str, str]]:
    """(id, name) of the taxonomy the workspace was built with, then any category of the samples that
    taxonomy lacks."""
    found = [(c.id, c.name) for c in workspace_taxonomy(ws).categories]
    known = {c for c, _ in found}
    for s in samples:
        if s.category not in known:
            found.append((s.category, s.category.replace("_", " ")))
            known.add(s.category)
    return found


def workspace_frames(ws: Workspace, samples: Sequence[Sample] = (),
                     taxonomy: Taxonomy | None = None) -> list[tuple[str, str]]:
    """(id, text) of the benign frames the scene arm offers: the workspace taxonomy's frame list, then any
    frame a sample accepts that the list lacks (shown by its id)."""
    taxonomy = taxonomy or workspace_taxonomy(ws)
    found = [(f.id, f.text) for f in taxonomy.frame_list]
    known = {f for f, _ in found}
    for s in samples:
        for frame in s.frames:
            if frame not in known:
                found.append((frame, frame.replace("_", " ")))
                known.add(frame)
    return found


# ----------------------------------------------------------------------------------------------
# items: what each arm plays
# ----------------------------------------------------------------------------------------------

# the Sample field each role hears (the adjudication project hears the mixture)
AUDIO_FIELD = {"speech": "speech", "scene": "scene_audio", "mixture": "mixture"}


def audio_field(role: str) -> str:
    return AUDIO_FIELD.get(role, "mixture")


@dataclass(frozen=True)
class Item:
    """One task to be: an item (a sample, a control or a catch item) heard in one role's project."""

    item_id: str
    role: str
    kind: str  # "sample" | "control" | "catch" | "danger" | "irrelevant" (OTHER_SCENES: scene arm catch items)
    audio: AudioRef | None
    expected: str | None = None  # catch items: the answer asked for; controls: "harmful"

    @property
    def what(self) -> str:
        if self.kind in OTHER_SCENES:
            return f"{OTHER_SCENES[self.kind].what} ({OTHER_SCENES[self.kind].field})"
        heard = {"speech": "clean speech", "scene": "scene alone"}.get(self.role, "mixture")
        return f"{heard} ({audio_field(self.role)})"


def sample_items(samples: Sequence[Sample], role: str) -> list[Item]:
    return [Item(s.sample_id, role, "sample", getattr(s, audio_field(role))) for s in samples]


def line_heads(samples: Sequence[Sample]) -> dict[str, str]:
    """sample id -> the id of its line's head: the first of the line's variants (by id) among `samples` (the
    wer manifest, so a push and a pull agree). The variants of a line (construction.speech.variants) share
    its scene and their twins' backgrounds (one seed, one danger scene; the under-speech gain follows each
    variant's glimpse match, a fraction of a dB): the scene arm hears them once, as the head's tasks, and
    pull gives every variant those labels. A build without variants: every sample is its own head."""
    heads: dict[str, str] = {}
    for s in sorted(samples, key=lambda s: s.sample_id):
        heads.setdefault(line_of(s), s.sample_id)
    return {s.sample_id: heads[line_of(s)] for s in samples}


def heads_only(samples: Sequence[Sample]) -> list[Sample]:
    """The samples that head their line among `samples` (one a line)."""
    heads = line_heads(samples)
    return [s for s in samples if heads[s.sample_id] == s.sample_id]


@dataclass(frozen=True)
class OtherScene:
    """A kind of scene-arm catch item besides a sample's own scene: its item id prefix (only in the key map,
    never in a task: keys are HMACs), the Sample field it plays, what it is called in messages."""

    prefix: str
    field: str
    what: str


# the scene arm's catch items by kind: the danger twin's scene (certified as real danger) and the irrelevant
# twin's background (certified as no frame); pull writes each kind's labels to annotated_<kind>
OTHER_SCENES = {"danger": OtherScene("danger-", "danger_scene_audio", "danger scene"),
                "irrelevant": OtherScene("irrelevant-", "irrelevant_scene_audio", "irrelevant background")}
DANGER_PREFIX = OTHER_SCENES["danger"].prefix
IRRELEVANT_PREFIX = OTHER_SCENES["irrelevant"].prefix


def other_item_id(kind: str, sample_id: str) -> str:
    return OTHER_SCENES[kind].prefix + sample_id


def danger_item_id(sample_id: str) -> str:
    return other_item_id("danger", sample_id)


def irrelevant_item_id(sample_id: str) -> str:
    return other_item_id("irrelevant", sample_id)


def other_audio(kind: str, sample: Sample) -> AudioRef | None:
    return getattr(sample, OTHER_SCENES[kind].field)


def other_items(kind: str, samples: Sequence[Sample]) -> list[Item]:
    """The `kind` catch items of these samples (those mixed with that twin), heard in the scene arm."""
    return [Item(other_item_id(kind, s.sample_id), "scene", kind, other_audio(kind, s))
            for s in samples if other_audio(kind, s) is not None]


def danger_items(samples: Sequence[Sample]) -> list[Item]:
    """The danger scenes of these samples (those mixed with a danger twin), heard in the scene arm."""
    return other_items("danger", samples)


def irrelevant_items(samples: Sequence[Sample]) -> list[Item]:
    """The irrelevant twins' backgrounds of these samples, heard in the scene arm."""
    return other_items("irrelevant", samples)


def control_items(controls: Sequence[Sample]) -> list[Item]:
    return [Item(c.sample_id, "mixture", "control", c.mixture, str(c.custom.get("expected") or "harmful"))
            for c in controls]


def catch_items(catch: Sequence[Sample]) -> list[Item]:
    return [Item(c.sample_id, "mixture", "catch", c.mixture, str(c.custom.get("expected"))) for c in catch]


def read_controls(ws: Workspace, sample_ids: set[str]) -> tuple[list[Sample], list[str]]:
    """The controls of the workspace whose sample is one of sample_ids; -> (controls, ids left out)."""
    if not ws.has_manifest(CONTROLS_STAGE):
        return [], []
    kept, left = [], []
    for c in ws.read_samples(CONTROLS_STAGE):
        (kept if c.custom.get("control_of") in sample_ids else left).append(c)
    return kept, [c.sample_id for c in left]


def read_catch(ws: Workspace) -> list[Sample]:
    return list(ws.read_samples(CATCH_STAGE)) if ws.has_manifest(CATCH_STAGE) else []


def catch_sample(ws: Workspace, index: int) -> Sample:
    """The index-th catch item: an offline voice asks for an answer, with 1-2 s of silence before it and 0.5-1.5 s
    after (a mixture's length, roughly). The silences are drawn afresh for each workspace (it keeps its items in
    manifests/catch.jsonl): the same offline voice gives the same samples everywhere, and a file named by its
    sha256 would tell an annotator of another workspace, or anyone who ran the code, that it is a check."""
    from construction.speech.tts import synthesize

    label = CATCH_ANSWERS[index % len(CATCH_ANSWERS)]
    voice = CATCH_VOICES[index % len(CATCH_VOICES)]
    text = CATCH_TEXT.format(label=label)
    audio, sr = synthesize(text, voice)
    audio = np.asarray(audio, dtype=np.float32)
    peak = float(np.max(np.abs(audio))) or 1.0
    draw = secrets.SystemRandom()
    audio = np.concatenate([np.zeros(int(draw.uniform(1.0, 2.0) * sr), np.float32), audio * (0.5 / peak),
                            np.zeros(int(draw.uniform(0.5, 1.5) * sr), np.float32)])
    ref = ws.store_audio(audio, sr)
    item_id = "catch-" + hashlib.sha256(f"{index}:{text}:{voice}".encode()).hexdigest()[:16]
    return Sample(sample_id=item_id, category="attention_check", speech_text=text, context="(attention check)",
                  background_tags=[], placement="underlay", benign_reason="(attention check)",
                  speaker_style="calm", voice_id=voice, speech=ref, mixture=ref,
                  custom={"catch": True, "expected": label, "expected_words": "yes"})


def ensure_catch(ws: Workspace, wanted: int) -> list[Sample]:
    """The workspace's catch items, made (offline TTS) up to `wanted`; existing ones are never removed
    (they may have tasks already)."""
    have = read_catch(ws)
    if len(have) >= wanted:
        return have
    made = [*have, *(catch_sample(ws, i) for i in range(len(have), wanted))]
    ws.write_manifest(CATCH_STAGE, made)
    return made


# ----------------------------------------------------------------------------------------------
# opaque task keys and their mapping
# ----------------------------------------------------------------------------------------------

def task_key_secret(state: dict[str, Any]) -> str:
    """The workspace's key secret, made on first use (the caller writes the state)."""
    if not state.get("task_key_secret"):
        state["task_key_secret"] = secrets.token_hex(16)
    return state["task_key_secret"]


def task_key(secret: str, role: str, item_id: str) -> str:
    """'t' + 20 hex of HMAC-SHA256(secret, role NUL item id): says nothing about the sample or the arm."""
    return "t" + hmac.new(secret.encode(), f"{role}\0{item_id}".encode(), hashlib.sha256).hexdigest()[:20]


def read_task_map(ws: Workspace) -> dict[str, tuple[str, str]]:
    path = ws.root / TASKS_FILE
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text())
        return {str(k): (str(v[0]), str(v[1])) for k, v in raw.items()}
    except (json.JSONDecodeError, AttributeError, IndexError, TypeError) as e:
        raise WorkbenchError(f"{path} is not a task key map ({e}); push again to rewrite it") from e


def write_task_map(ws: Workspace, mapping: dict[str, tuple[str, str]]) -> None:
    rows = [f"{json.dumps(k)}: {json.dumps(list(v))}" for k, v in sorted(mapping.items())]
    atomic_write_text(ws.root / TASKS_FILE, "{\n" + ",\n".join(rows) + "\n}\n")


def shuffle_seed(secret: str, role: str) -> int:
    """The import order of a project's tasks: seeded by the secret, so task ids say nothing of the
    manifest's order (which is grouped by category)."""
    return int.from_bytes(hashlib.sha256(f"order\0{secret}\0{role}".encode()).digest()[:8], "big")
