"""The release gate on the library review: a release's mixtures use only clips a person confirmed by ear.

The library is the one the workspace was built with (config.yaml's mix.sounds); the review is the
workspace's W/library_review.jsonl (python -m annotation.library pull) and the library's own
LIBRARY/review.jsonl (pull --into-library), read together (annotation.library_review.read_reviews). A clip used by a
released sample or control (its mix recipe's clip id and sha256) counts as confirmed when its review line
confirms the file the recipe mixed (a procedural class: the model version, whatever draw). release.export refuses
otherwise, unless --allow-unreviewed-sounds, which the card and release.json then state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from annotation.library_review import is_confirmed, read_reviews
from annotation.server import server_flags
from construction.core.errors import WorkbenchError
from release.inputs import ReleaseInputs

FLAG = "--allow-unreviewed-sounds"


@dataclass(frozen=True)
class SoundReview:
    """What release.json and the card say of the library review (counts only, no path)."""

    review_file: bool  # the workspace or the library has a review file
    library_clips: int | None  # clips in the catalog (None: the library is not on this machine)
    reviewed: int  # clips of the review with at least one answer for their current file
    confirmed: int
    used: int  # distinct clips the released mixtures use
    used_unconfirmed: int
    demo_answers: int  # answers from scripted demo reviewers
    human_answers: int
    allowed_unreviewed: bool  # exported with --allow-unreviewed-sounds
    demo_release: bool = False  # scripted labels: never published, so the review reports but does not refuse

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def library_path(inputs: ReleaseInputs) -> Path | None:
    sounds = (inputs.config.get("mix") or {}).get("sounds")
    return Path(str(sounds)).expanduser() if sounds else None


def used_clips(inputs: ReleaseInputs) -> dict[str, set[str]]:
    """clip id -> the sha256s the released samples' and controls' recipes mixed (the twins' backgrounds
    are made from the scene, and the danger twin's from procedural danger classes no scene uses)."""
    used: dict[str, set[str]] = {}
    for s in [*inputs.samples, *inputs.controls]:
        for sound in s.mix.sounds if s.mix is not None else []:
            used.setdefault(sound.clip_id, set()).add(sound.sha256)
    return used


def catalog_clips(library: Path | None) -> dict[str, str] | None:
    """clip id -> sha256 of the library's catalog, None when it has none here."""
    if library is None or not (library / "catalog.jsonl").is_file():
        return None
    from construction.sounds.library import read_catalog

    clips, _ = read_catalog(library)
    return {c.clip_id: c.sha256 for c in clips}


def review_summary(inputs: ReleaseInputs, allowed: bool) -> tuple[SoundReview, list[str]]:
    """The card's counts, and the used clips that are not confirmed (clip id, with why). A confirmation
    that scripted demo reviewers took part in counts only for a demo release: people must have heard the
    clips of a real one."""
    library = library_path(inputs)
    demo_release = inputs.demo
    review = read_reviews(inputs.workspace.root, library)
    lines = review or {}
    catalog = catalog_clips(library)
    current = {cid: line for cid, line in lines.items()
               if catalog is None or catalog.get(cid) == line.get("sha256")}  # a changed clip: unreviewed again
    used = used_clips(inputs)
    unconfirmed = []
    for clip_id, shas in sorted(used.items()):
        line = lines.get(clip_id)  # confirmed for the file the recipe mixed, whatever the catalog holds now
        scripted = bool(line and line.get("demo")) and not demo_release
        if scripted or not all(is_confirmed(line, sha) for sha in shas):
            line = lines.get(clip_id)
            why = ("not in the review" if line is None else
                   "confirmed by scripted demo reviewers, which only a demo release accepts" if scripted else
                   "changed since it was reviewed" if line.get("sha256") not in shas
                   else f"{line.get('named', 0)} of {line.get('reviewers', 0)} reviewer(s) named its tag")
            unconfirmed.append(f"{clip_id}: {why}")
    summary = SoundReview(
        review_file=review is not None, library_clips=None if catalog is None else len(catalog),
        reviewed=sum(1 for line in current.values() if line.get("reviewers")),
        confirmed=sum(1 for line in current.values() if line.get("confirmed") is True),
        used=len(used), used_unconfirmed=len(unconfirmed),
        demo_answers=sum(int(line.get("demo") or 0) for line in current.values()),
        human_answers=sum(int(line.get("reviewers") or 0) - int(line.get("demo") or 0) for line in current.values()),
        allowed_unreviewed=allowed, demo_release=demo_release)
    return summary, unconfirmed


def check_sound_review(inputs: ReleaseInputs, allowed: bool) -> SoundReview:
    """The summary for the card; refuses (WorkbenchError, exit 2) when a used clip is unconfirmed and the
    flag was not given. A demo release (scripted labels) is never published (--push-to-hub refuses it):
    it is not held back, and its card counts the unconfirmed clips."""
    summary, unconfirmed = review_summary(inputs, allowed)
    if unconfirmed and not allowed and not summary.demo_release:
        shown = "\n".join(f"  {u}" for u in unconfirmed[:20]) + ("\n  ..." if len(unconfirmed) > 20 else "")
        where = "the workspace's sound library (mix.sounds)" if library_path(inputs) else "no sound library recorded"
        ws = server_flags(inputs.workspace.root)
        raise WorkbenchError(
            f"{len(unconfirmed)} of {summary.used} background clip(s) the release mixes are not confirmed by the "
            f"library review of {where}:\n{shown}\nReview them by ear: python -m annotation.library push{ws}, label, "
            f"python -m annotation.library pull{ws}; or export anyway with {FLAG} (the card says so)")
    return summary


def card_line(review: SoundReview | dict[str, Any] | None) -> str:
    """The card's sentence on the library review."""
    if review is None:
        return ""
    if isinstance(review, dict):
        review = SoundReview(**review)
    of = f" of {review.library_clips}" if review.library_clips is not None else ""
    if not review.review_file:
        text = "**Library review:** none: no clip of the sound library was reviewed by ear."
    else:
        who = ("scripted demo reviewers" if review.demo_answers and not review.human_answers else
               "people and scripted demo reviewers" if review.demo_answers else "people")
        text = (f"**Library review:** {review.reviewed}{of} library clips were reviewed by ear (a listener named "
                f"the sound from the tag list, no tag shown) by {who}; {review.confirmed} confirmed.")
    text += (f" The release mixes {review.used} distinct clip(s), {review.used_unconfirmed} of them not confirmed"
             + (f" (exported with `{FLAG}`)." if review.allowed_unreviewed else
                " (a demo release, never published, is not held back by the review)."
                if review.demo_release and review.used_unconfirmed else "."))
    return text
