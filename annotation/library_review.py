"""The library review apart from any server call: what a reviewer is asked, which audio each task plays,
when a clip counts as confirmed, and the review file written beside the library's catalog.

A person hears a clip of the sound library (or one draw of a procedural class) with nothing else shown
(no tag, title, file name or source: the task holds the audio URL and an opaque key, as in the arms) and
picks the sound from the taxonomy's tag list, each shown by its description, or "none of these". The
file names and package records the tags came from are exactly what this is meant to check, so they
never reach the reviewer.

The review is the workspace's: python -m annotation.library pull writes W/library_review.jsonl, and
never touches the library, which other workspaces and clones share. A library may carry a review of
its own, LIBRARY/review.jsonl (same lines), written only by `pull --into-library`, from people's answers
(never scripted demo reviewers'). Whoever reads the review (release.sound_review) reads both through
read_reviews: per clip, the workspace's line, or the library's when it heard the same file with more
reviewers.

Each file holds one line per clip of the catalog, sorted by clip id:

    clip_id, sha256 (the file the review heard; a clip whose file changed is unreviewed again), tags,
    procedural ("" for a recording), answers {pseudonym: tag or "none"}, reviewers, named (how many named
    one of the clip's tags), confirmed, demo (how many answers came from scripted demo reviewers),
    draws (procedural only: the same per rendered draw, with its seed)

A recording is confirmed when at least MIN_REVIEWERS reviewed it and at least 2/3 of them named one of
its tags; a procedural class when each of its draws is, by that rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from annotation.protocol import ArmSpec
from annotation.state import read_json_object
from construction.core.errors import WorkbenchError
from construction.core.workspace import Workspace, atomic_write_text

ROLE = "library"  # the task keys' role: keys of the arms and of the review never collide
NONE_OF_THESE = "none_of_these"
NONE_TEXT = "None of these"
MIN_REVIEWERS = 2
CONFIRM_FRACTION = 2 / 3
REVIEW_FILE = "review.jsonl"  # beside the catalog: written only by pull --into-library, from people's answers
WORKSPACE_REVIEW_FILE = "library_review.jsonl"  # in the workspace: what pull writes
ITEMS_FILE = "library_review_items.json"  # in the workspace: item id -> what its task plays (never served)
DEFAULT_DRAWS = 3  # rendered draws of each procedural class
MAX_REVIEW_S = 30.0  # a long bed is played for its first 30 s: enough to name it, not an evening's work
QUESTION = "Which sound is this?"
# the clip as a picture beside the audio: a reviewer can look as well as listen (a hard cut, a thud
# where a ring was expected, beeps where ticks were promised show at a glance)
SPECTROGRAM_CAPTION = "What you hear, as a picture: time runs left to right, pitch goes up, brighter is louder."


class LibrarySpec(ArmSpec):
    """The review project: one required choice among the tags (by description) and "none of these".
    Its annotations are parsed as a sound heard alone (the scene arm's record) and never written to a
    sample: only to the review file."""

    @property
    def arm(self) -> str:
        return "scene"

    def label_config(self) -> str:
        items = "\n".join(f"    <Choice value={quoteattr(text)} alias={quoteattr(value)}/>"
                          for value, text in self.choices)
        return ("<View>\n  <Header value=\"Play the whole clip, from start to end, before you answer.\"/>\n"
                '  <Audio name="audio" value="$audio" hotkey="space"/>\n'
                f"  <Header value={quoteattr(SPECTROGRAM_CAPTION)}/>\n"
                '  <Image name="spectrogram" value="$image"/>\n'
                f"  <Header value={quoteattr(QUESTION)}/>\n"
                f'  <Choices name="label" toName="audio" choice="single-radio" required="true">\n{items}\n'
                "  </Choices>\n</View>")

    def instructions(self) -> str:
        return ("<h2>Which sound is this?</h2><p>Each clip is one background sound: no one is speaking to you. "
                "Use headphones in a quiet place and <b>play the whole clip</b> before you answer.</p>"
                "<p>Choose the one sound from the list that the clip is. Choose <b>None of these</b> when it is "
                "none of them, or when you cannot tell: an honest \"none\" is worth more than a guess.</p>"
                "<p>Below the player is the clip's spectrogram: time runs left to right, pitch goes up, brighter "
                "is louder. Use it to check what you hear (a click, a ring, a steady hiss), not in place of "
                "listening.</p><p>Skip a clip only when it does not play.</p>")


def review_spec(tags: dict[str, str]) -> LibrarySpec:
    """The project of a taxonomy's tags ({tag: description}), in the taxonomy's order."""
    if not tags:
        raise WorkbenchError("the taxonomy has no 'tags:' list; the library review offers its tags")
    texts = [*(text or tag.replace("_", " ") for tag, text in tags.items()), NONE_TEXT]
    if len(set(texts)) != len(texts) or NONE_OF_THESE in tags:
        raise WorkbenchError("the taxonomy's tag descriptions must be distinct (and no tag may be "
                             f"{NONE_OF_THESE!r}) to be offered as answers")
    return LibrarySpec(ROLE, (*((tag, text or tag.replace("_", " ")) for tag, text in tags.items()),
                              (NONE_OF_THESE, NONE_TEXT)))


@dataclass(frozen=True)
class ReviewItem:
    """One task: a clip (draw None) or one draw of a procedural class, as stored for the review."""

    item_id: str
    clip_id: str
    sha256: str  # the catalog's sha256 of the clip
    tags: tuple[str, ...]
    procedural: str = ""
    draw: int | None = None
    seed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"clip_id": self.clip_id, "sha256": self.sha256, "tags": list(self.tags),
                "procedural": self.procedural, "draw": self.draw, "seed": self.seed}


def item_id(clip_id: str, sha256: str, draw: int | None = None) -> str:
    """A clip's item id names its file's hash: a changed clip is a new task, never the old one's."""
    return f"{clip_id}@{sha256[:16]}" + (f"#draw{draw}" if draw is not None else "")


def read_items(ws: Workspace) -> dict[str, dict[str, Any]]:
    """item id -> {clip_id, sha256, tags, procedural, draw, seed, audio} as push recorded them."""
    return read_json_object(ws.root / ITEMS_FILE, "push the library review again")


def write_items(ws: Workspace, items: dict[str, dict[str, Any]]) -> None:
    atomic_write_text(ws.root / ITEMS_FILE, json.dumps(items, indent=1, sort_keys=True) + "\n")


def verdict(answers: dict[str, str], tags: Iterable[str]) -> dict[str, Any]:
    """reviewers, named, confirmed of one task's answers (pseudonym -> tag or none_of_these)."""
    own = set(tags)
    named = sum(1 for tag in answers.values() if tag in own)
    n = len(answers)
    return {"reviewers": n, "named": named, "confirmed": n >= MIN_REVIEWERS and named >= CONFIRM_FRACTION * n - 1e-9}


def review_line(clip: Any, answers_by_item: dict[str, dict[str, str]], items: dict[str, dict[str, Any]],
                demo: frozenset[str]) -> dict[str, Any]:
    """The review file's line of a catalog clip: the answers of the tasks that played its current file."""
    procedural = str(getattr(clip, "procedural", "") or "")
    mine = sorted((iid, meta) for iid, meta in items.items()
                  if meta.get("clip_id") == clip.clip_id and meta.get("sha256") == clip.sha256)
    line: dict[str, Any] = {"clip_id": clip.clip_id, "sha256": clip.sha256, "tags": list(clip.tags),
                            "procedural": procedural}
    if procedural:
        draws = []
        for iid, meta in mine:
            answers = answers_by_item.get(iid, {})
            draws.append({"draw": meta.get("draw"), "seed": meta.get("seed"), "answers": answers,
                          **verdict(answers, clip.tags)})
        all_answers = [a for d in draws for a in d["answers"].items()]
        line.update(answers={}, reviewers=sum(d["reviewers"] for d in draws),
                    named=sum(d["named"] for d in draws),
                    confirmed=bool(draws) and all(d["confirmed"] for d in draws),
                    demo=sum(1 for who, _ in all_answers if who in demo), draws=draws)
        return line
    answers: dict[str, str] = {}
    for iid, _ in mine:
        answers.update(answers_by_item.get(iid, {}))
    line.update(answers=dict(sorted(answers.items())), **verdict(answers, clip.tags),
                demo=sum(1 for who in answers if who in demo))
    return line


def keep_earlier(lines: Sequence[dict[str, Any]], earlier: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Of two reviews of the same file (sha256: this pull's and an earlier one, or the workspace's and the
    library's), a clip keeps the one more people heard. Pseudonyms are salted per workspace, so answers
    from two workspaces are never pooled (one person could count twice)."""
    out = []
    for line in lines:
        before = earlier.get(line["clip_id"]) or {}
        keep = before.get("sha256") == line["sha256"] and (before.get("reviewers") or 0) > line["reviewers"]
        out.append(before if keep else line)
    return out


def write_review(library: Path, lines: Sequence[dict[str, Any]], name: str = REVIEW_FILE) -> Path:
    """LIBRARY/review.jsonl (or the file `name` in another folder: the workspace's), whole or not at all."""
    path = Path(library) / name
    text = "".join(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n"
                   for line in sorted(lines, key=lambda line: line["clip_id"]))
    atomic_write_text(path, text)
    return path


def write_workspace_review(ws: Workspace, lines: Sequence[dict[str, Any]]) -> Path:
    """W/library_review.jsonl, what pull writes."""
    return write_review(ws.root, lines, WORKSPACE_REVIEW_FILE)


def read_workspace_review(root: str | Path) -> dict[str, dict[str, Any]] | None:
    """clip id -> the workspace's review line; None when the workspace (root) has none."""
    return read_review(root, WORKSPACE_REVIEW_FILE, workspace_demo(root))


def workspace_demo(root: str | Path) -> frozenset[str]:
    """The pseudonyms of the workspace's scripted demo accounts (annotation.json, as push and the demo record
    them): a review line's answers from them are scripted whatever its own `demo` says."""
    from annotation.server import STATE_FILE

    return frozenset(read_json_object(Path(root).expanduser() / STATE_FILE, "fix or delete it")
                     .get("demo_annotators") or [])


def rederived(line: dict[str, Any], demo: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The line with its counts and verdict as its answers give them: reviewers, named, confirmed (per draw
    too), and demo at least the answers of `demo` accounts. A review file can be edited by hand; its own
    flags (confirmed, reviewers, demo: 0) decide nothing."""
    tags = line.get("tags") if isinstance(line.get("tags"), list) else []

    def answers_of(entry: dict[str, Any]) -> dict[str, str]:
        given = entry.get("answers")
        return {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}

    if line.get("procedural") and line.get("draws"):  # a class: confirmed by each of its draws
        draws = [{**d, "answers": answers_of(d), **verdict(answers_of(d), tags)}
                 for d in line.get("draws") or [] if isinstance(d, dict)]
        who = [k for d in draws for k in d["answers"]]
        counts = {"draws": draws, "reviewers": sum(d["reviewers"] for d in draws),
                  "named": sum(d["named"] for d in draws), "confirmed": bool(draws) and all(d["confirmed"] for d in draws)}
    else:
        answers = answers_of(line)
        who = list(answers)
        counts = {"answers": answers, **verdict(answers, tags)}
    stated = line.get("demo") if isinstance(line.get("demo"), int) and not isinstance(line.get("demo"), bool) else 0
    return {**line, **counts, "demo": max(stated, sum(1 for k in who if k in demo))}


def read_reviews(root: str | Path, library: str | Path | None) -> dict[str, dict[str, Any]] | None:
    """The review a workspace's release is checked against: its own (W/library_review.jsonl) and the
    library's (LIBRARY/review.jsonl), per clip the workspace's line unless the library's heard the same
    file with more reviewers (keep_earlier). None when neither file exists."""
    own = read_workspace_review(root)
    shared = read_review(library, demo=workspace_demo(root)) if library is not None else None
    if own is None or shared is None:
        return own if shared is None else shared
    merged = {line["clip_id"]: line for line in keep_earlier(list(own.values()), shared)}
    return {**shared, **merged}


def read_review(library: str | Path, name: str = REVIEW_FILE,
                demo: frozenset[str] = frozenset()) -> dict[str, dict[str, Any]] | None:
    """clip id -> its review line, its counts and verdict rederived from its answers (`demo`: the reading
    workspace's scripted accounts); None when the library (or the folder: `name`) has no review file."""
    path = Path(library).expanduser() / name
    if not path.is_file():
        return None
    out: dict[str, dict[str, Any]] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as e:
            raise WorkbenchError(f"{path}:{n} is not JSON ({e.msg}); pull the library review again") from e
        if not isinstance(line, dict) or not isinstance(line.get("clip_id"), str):
            raise WorkbenchError(f"{path}:{n} is not a review line (no clip_id); pull the library review again")
        out[line["clip_id"]] = rederived(line, demo)
    return out


def is_confirmed(line: dict[str, Any] | None, sha256: str) -> bool:
    """Whether a clip as mixed (its recipe's sha256) is confirmed: a recording for the file the review
    heard; a procedural class for the model version the review heard draws of (its sha256 names the
    version: each use is a new seeded draw of it)."""
    if not line or line.get("confirmed") is not True:
        return False
    return line.get("sha256") == sha256
