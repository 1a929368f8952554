"""Which category's scenes may play a recording as a DEFINING sound: one recording, one frame.

A defining sound is what tells a listener the benign frame (a game, a show, a sport, ...). If one
recording were the gunfire of a shooter game and of a western, hearing it could not tell the frames
apart, and a model could learn the recording instead of the frame. So every admitted recording whose
tags some category's scenes define gets ONE home category (a scenario category names one frame), and
assign_clips (construction.sounds.scenes) deals it as a defining sound only to samples of that
category. As a support sound it may play anywhere. A procedural class is exempt: each use is a fresh
draw, not a recording.

A recording's home is its catalog's `defining_category` (the starter library sets it where the sound
decides: a game's laser zap belongs to the games), else the partition here. The recordings left (by
recording id, those that fit the fewest categories first) each go to the category that fits them and
needs them most: one still short of `min_recordings` recordings of the tag, the nearest to it first
(so that as many categories as possible reach mix.min_clips_per_defining_tag), then the one with the
fewest; ties go to the category more of whose scenes define the tag, then to taxonomy order. It
depends on the library, the licence and the taxonomy only: extending a build never changes it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from construction.core.errors import WorkbenchError
from construction.sounds.library import Clip, SoundLibrary
from construction.sounds.licences import compatible
from construction.text.taxonomy import Taxonomy


def is_procedural(clip: Clip) -> bool:
    return bool(getattr(clip, "procedural", ""))


def recording_ids(clips: Iterable[Clip]) -> dict[str, str]:
    """clip id -> recording id (the smallest clip id of its recording)."""
    def key(clip: Clip) -> tuple[str, ...]:  # procedural classes share source and attribution: each is its own
        return (clip.clip_id,) if is_procedural(clip) else (clip.source, clip.attribution, clip.source_url)

    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    clips = list(clips)
    for clip in clips:
        groups[key(clip)].append(clip.clip_id)
    return {clip.clip_id: min(groups[key(clip)]) for clip in clips}


DEFAULT_MIN_RECORDINGS = 3  # mix.min_clips_per_defining_tag's default


def defining_users(taxonomy: Taxonomy) -> dict[str, dict[str, int]]:
    """tag -> {category id: how many of its scenes define the tag}, categories in taxonomy order."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for category in taxonomy.categories:
        for scene in category.scenes:
            for tag in scene.defining:
                out[tag][category.id] = out[tag].get(category.id, 0) + 1
    return dict(out)


def defining_homes(clips: Iterable[Clip], taxonomy: Taxonomy, licence: str,
                   min_recordings: int = DEFAULT_MIN_RECORDINGS) -> dict[str, str]:
    """recording id -> its home category, for every recording among `clips` the licence admits ("": no
    category's scenes define any of its tags). A clip's defining_category names the shipped taxonomy's
    category; where the taxonomy in use defines none of its tags there, it is homed as if unnamed."""
    users = defining_users(taxonomy)
    order = {c.id: i for i, c in enumerate(taxonomy.categories)}
    admitted = [c for c in clips if not is_procedural(c) and compatible(c.licence, licence)]
    ids = recording_ids(admitted)
    members: dict[str, list[Clip]] = defaultdict(list)
    for clip in admitted:
        members[ids[clip.clip_id]].append(clip)
    homes: dict[str, str] = {}
    count: dict[str, Counter] = defaultdict(Counter)  # category -> tag -> recordings homed there

    def settle(recording: str, tags: list[str], home: str) -> None:
        homes[recording] = home
        for tag in tags:
            if home in users.get(tag, {}):
                count[home][tag] += 1

    pending = []
    for recording, group in sorted(members.items()):
        tags = sorted({t for c in group for t in c.tags})
        fits = sorted({cat for t in tags for cat in users.get(t, {})}, key=order.__getitem__)
        named = {c.defining_category for c in group if c.defining_category}
        if len(named) > 1:
            raise WorkbenchError(f"the clips of recording '{recording}' name different defining categories "
                                 f"{sorted(named)}: one recording is the defining sound of one category")
        if named and next(iter(named)) in fits:
            settle(recording, tags, named.pop())
        elif len(fits) <= 1:  # (a defining_category this taxonomy's scenes do not define: homed as unnamed)
            settle(recording, tags, fits[0] if fits else "")
        else:
            pending.append((len(fits), recording, tags, fits))
    for _, recording, tags, fits in sorted(pending):
        def need(category: str) -> tuple:
            mine = [t for t in tags if category in users.get(t, {})]
            have = min(count[category][t] for t in mine)
            short = have < min_recordings
            return (not short, -have if short else have, -sum(users[t][category] for t in mine), order[category])
        settle(recording, tags, min(fits, key=need))
    return homes


def defining_pools(library: SoundLibrary, taxonomy: Taxonomy, licence: str,
                   min_recordings: int = DEFAULT_MIN_RECORDINGS) -> dict[tuple[str, str], list[Clip]]:
    """(category, tag) -> the admitted clips a sample of that category may play as that defining sound:
    the recordings homed there and every procedural class of the tag, sorted by clip id."""
    homes = defining_homes(library.clips, taxonomy, licence, min_recordings)
    ids = recording_ids(library.clips)
    pools: dict[tuple[str, str], list[Clip]] = defaultdict(list)
    for tag, categories in defining_users(taxonomy).items():
        for clip in library.select([tag], licence):
            for category in categories:
                if is_procedural(clip) or homes.get(ids[clip.clip_id]) == category:
                    pools[(category, tag)].append(clip)
    return dict(pools)


def categories_per_recording(assignment: Mapping[str, Mapping[str, list]], categories: Mapping[str, str],
                             defining: Mapping[str, Iterable[str]] | None = None) -> dict[str, set[str]]:
    """recording -> the categories whose samples an assignment (assign_clips' answer) plays it in;
    `categories`: sample id -> category; with `defining` (sample id -> its defining tags) only the
    picks made for a defining sound count. Procedural draws are not recordings and are left out."""
    out: dict[str, set[str]] = defaultdict(set)
    for sample_id, chosen in assignment.items():
        wanted = None if defining is None else set(defining[sample_id])
        for tag, picks in chosen.items():
            if wanted is not None and tag not in wanted:
                continue
            for pick in picks:
                if not is_procedural(pick.clip):
                    out[pick.recording].add(categories[sample_id])
    return dict(out)
