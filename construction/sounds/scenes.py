"""Scenes meet the sound library: which scenes can be rendered, and which clip renders each sound.

A scene names its DEFINING sounds (the ones that make the speech benign: every one is rendered) and
optional SUPPORT sounds (taxonomy tags). generate pairs speech only with scenes whose defining sounds
have clips under the release licence; mix draws the clips so that use is as even as the library allows.

Use is balanced on RECORDINGS, then on TAKES. Clips cut from one recording count as one recording: the
catalog has no field naming a clip's original file, so clips with the same `source`, `attribution` and
`source_url` are taken as one recording (the importers name the original sound in the attribution:
ESC-50's excerpts of one freesound sound share it; every starter clip has its own, so there each clip is
its own recording). A long bed is cut into non-overlapping takes of mix.take_s: floor(duration / take_s)
of them (a shorter bed is one take and loops); an event is one take. A procedural clip (Clip.procedural
non-empty) renders a fresh draw per use: its takes never run out.

No real recording serves more than MAX_RECORDING_SHARE of a category's samples once the category is
large enough for that to be possible (a procedural class takes what is left; without one the least-used
recording is dealt all the same, and generate keeps such a sound's scenes under that capacity). A one-shot
that must come many times in one scene (a burst, or the sound that carries a scene with no bed: its
COVER) is dealt spare recordings, as many as its copies need (at most MAX_SPARES), so that no recording
plays more than 3 times in it; where the cover's sound has a bed (a crowd, a saw, bubbles), the scene
gets the bed instead.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from construction.core.errors import WorkbenchError
from construction.core.record import Sample, stable_seed
from construction.sounds.library import Clip, SoundLibrary, load_library
from construction.sounds.partition import DEFAULT_MIN_RECORDINGS, defining_pools, is_procedural, recording_ids
from construction.text.taxonomy import EventPattern, Taxonomy

# of a category's samples one real recording may serve: the rule is 15 % of the KEPT samples, so the deal
# keeps a margin for the few the WER gate drops (75 of 500 dealt would be 15.3 % of 490 kept)
MAX_RECORDING_SHARE = 0.14
MIN_SHARE_USES = 10  # ... but every recording may serve this many: a small build is not pushed onto procedural classes
MAX_SPARES = 4  # more recordings of a burst or a cover sound: 3 copies each
COPIES_PER_RECORDING = 3  # construction.mixing.tracks.MAX_REPEATS (this layer cannot import it)


def spares_needed(sample: Sample, clip: Clip, burst: bool, cover: bool) -> int:
    """Spare recordings a one-shot's copies need in one scene, estimated before the speech is measured
    (its words at 0.38 s each) from the clip's length: a cover runs the whole clip (2.5 s alone, the
    speech, 2 s after), a burst two strings of about four copies."""
    speech_s = sample.speech.duration_s if sample.speech else 0.6 + 0.38 * len(sample.speech_text.split())
    copy_s = 0.5 * min(clip.duration_s, 3.0) + 0.1  # a clip's sound is often shorter than the clip
    copies = (2.5 + speech_s + 2.0) / copy_s if cover else 0
    if burst:
        copies = max(copies, 8)
    return max(0, min(MAX_SPARES, math.ceil(copies / COPIES_PER_RECORDING) - 1))


def open_library(path: str | Path, check_audio: bool = True, verified: Path | None = None) -> SoundLibrary:
    """The sound library at `path`, or a clear error saying how to get one (`check_audio`, `verified`:
    see load_library)."""
    root = Path(path).expanduser()
    if not (root / "catalog.jsonl").exists():
        raise WorkbenchError(f"no sound library at {root} (no catalog.jsonl): build the offline one with "
                             f"python -m construction.sounds.starter --sounds {root}, or set mix.sounds")
    return load_library(root, check_audio=check_audio, verified=verified)


def scene_sounds(sample: Sample, taxonomy: Taxonomy) -> tuple[list[str], list[str]]:
    """(defining tags, support tags) of the sample's scene. A sample made before scenes existed (or whose
    scene left the taxonomy) keeps its background tags, all taken as defining."""
    home = taxonomy.scene_home.get(sample.scene_id or "")
    if home is None:
        return list(sample.background_tags), []
    scene = home[1]
    return list(scene.defining), [t for t in scene.support if t not in scene.defining]


def clips_by_tag(library: SoundLibrary, tags: Iterable[str], licence: str) -> dict[str, list[Clip]]:
    """The clips the release licence admits for each tag, sorted by id (reproducible draws)."""
    return {tag: library.select([tag], licence) for tag in tags}


def unrenderable_scenes(taxonomy: Taxonomy, library: SoundLibrary, licence: str,
                        min_recordings: int | None = None) -> dict[str, list[str]]:
    """scene id -> the defining sounds no admitted clip of the scene's category carries (each recording
    is a defining sound of one category: construction.sounds.partition); renderable scenes are absent."""
    pools = _pools(library, taxonomy, licence, min_recordings)
    return {scene.id: missing for c in taxonomy.categories for scene in c.scenes
            if (missing := [t for t in scene.defining if not pools.get((c.id, t))])}


def _pools(library: SoundLibrary, taxonomy: Taxonomy, licence: str, min_recordings: int | None):

    return defining_pools(library, taxonomy, licence, min_recordings or DEFAULT_MIN_RECORDINGS)


def _recordings(clips: list[Clip], ids: dict[str, str]) -> int:
    """Distinct recordings among clips; a procedural clip counts as unbounded (a large number)."""
    return 10 ** 6 if any(is_procedural(c) for c in clips) else len({ids[c.clip_id] for c in clips})


def scene_category(sample: Sample, taxonomy: Taxonomy) -> str | None:
    """The category whose defining recordings a sample's scene may play: the scene's own (the sample's
    category, in a consistent build); None for a sample made before scenes (any recording of its tags)."""
    home = taxonomy.scene_home.get(sample.scene_id or "")
    return home[0].id if home else None


def take_count(clip: Clip, take_s: float) -> int:
    """Non-overlapping takes of a bed (a short bed is one take); an event is one take. A procedural
    clip has no fixed number: 0 means unbounded."""
    if is_procedural(clip):
        return 0
    if clip.kind != "bed":
        return 1
    return max(1, int(clip.duration_s // take_s))


def take_span(clip: Clip, take: int, take_s: float) -> tuple[float, float]:
    """(start, end) of a take in the clip, s; the last take runs to the clip's end."""
    n = take_count(clip, take_s)
    if n <= 1:
        return 0.0, clip.duration_s
    return take * take_s, (clip.duration_s if take == n - 1 else (take + 1) * take_s)


def recordings_by_tag(library: SoundLibrary, tags: Iterable[str], licence: str) -> dict[str, int]:
    """Distinct admitted recordings per tag; a tag with a procedural clip counts as unbounded (a large
    number: every use is a fresh draw)."""
    ids = recording_ids(library.clips)
    return {tag: _recordings(clips, ids) for tag, clips in clips_by_tag(library, tags, licence).items()}


def thin_tags(samples: Iterable[Sample], taxonomy: Taxonomy, library: SoundLibrary, licence: str,
              min_clips: int) -> dict[str, tuple[int, list[str]]]:
    """Defining sounds the samples need that some but fewer than `min_clips` admitted RECORDINGS of the
    sample's category carry (clips cut from one recording count once; a procedural class is always
    enough): tag -> (the fewest recordings a category has, the scenes that need it there). (A sound no
    clip of the category carries is each sample's no_background.)"""
    pools, ids = _pools(library, taxonomy, licence, min_clips), recording_ids(library.clips)
    needs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for sample in samples:
        for tag in scene_sounds(sample, taxonomy)[0]:
            needs[(scene_category(sample, taxonomy) or "", tag)].add(sample.scene_id or ",".join(sample.background_tags))
    out: dict[str, tuple[int, list[str]]] = {}
    for (category, tag), scenes in sorted(needs.items()):
        clips = pools.get((category, tag), []) if category else library.select([tag], licence)
        n = _recordings(clips, ids)
        if 0 < n < min_clips:
            fewest, before = out.get(tag, (n, []))
            out[tag] = (min(n, fewest), sorted(set(before) | scenes))
    return out


def thin_scenes(taxonomy: Taxonomy, library: SoundLibrary, licence: str, min_recordings: int
                ) -> dict[str, dict[str, int]]:
    """scene id -> {defining sound: recordings} for scenes some of whose defining sounds have admitted
    clips of the scene's category from fewer than `min_recordings` recordings (and no procedural
    class). Every sample of such a scene would play one of a handful of recordings, so generate does
    not pair speech with it."""
    pools, ids = _pools(library, taxonomy, licence, min_recordings), recording_ids(library.clips)
    out = {}
    for c in taxonomy.categories:
        for scene in c.scenes:
            counts = {t: _recordings(pools.get((c.id, t), []), ids) for t in scene.defining}
            if thin := {t: n for t, n in counts.items() if 0 < n < min_recordings}:
                out[scene.id] = thin
    return out


GAP_S, GAP_DB = 0.3, 35.0  # a bed with a quieter run this long (re its 90th-percentile 10 ms frame) has a hole


def has_gap(audio, sample_rate: int) -> bool:
    """Whether a recording falls GAP_DB under its loud frames for GAP_S or more (a dog's bed between
    barks, a roar's silent end): looped under a scene, it leaves a hole."""
    import numpy as np

    hop = max(1, int(0.01 * sample_rate))
    n = audio.size // hop
    if n == 0:
        return True
    level = 10 * np.log10(np.mean(np.asarray(audio[:n * hop], dtype=np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)
    quiet = np.concatenate([[0], (level < np.percentile(level, 90) - GAP_DB).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(quiet))
    return bool(np.any(edges[1::2] - edges[::2] >= GAP_S / 0.01))


class GaplessBeds:
    """clip -> whether it can carry a scene as a bed: a procedural bed always, a recorded one when it has
    no hole (has_gap, decoded once)."""

    def __init__(self, library: SoundLibrary, sample_rate: int):
        self.library, self.sample_rate, self.known = library, sample_rate, {}

    def __call__(self, clip: Clip) -> bool:
        if clip.kind != "bed" or is_procedural(clip):
            return True
        if clip.clip_id not in self.known:
            self.known[clip.clip_id] = not has_gap(self.library.load_audio(clip, self.sample_rate), self.sample_rate)
        return self.known[clip.clip_id]


@dataclass(frozen=True)
class Pick:
    """One clip dealt to a sample for a tag: which recording and which take of it. A `spare` gives the
    tag's copies more recordings to come from (it is not a source layered of its own)."""

    clip: Clip
    recording: str
    take: int
    spare: bool = False


def scene_order(sample: Sample, taxonomy: Taxonomy, present: Iterable[str]
                ) -> tuple[Callable[[str], EventPattern], Callable[[str], str | None], Callable[[str], int]]:
    """(pattern of a tag, the present tag it comes after or None, its depth in that order) for the
    sample's scene; `present`: the tags that play."""
    home = taxonomy.scene_home.get(sample.scene_id or "")
    present = set(present)

    def spec(tag: str) -> EventPattern:
        return home[1].event(tag) if home else EventPattern()

    def after(tag: str) -> str | None:
        return spec(tag).after if spec(tag).after in present else None

    def depth(tag: str) -> int:
        return 0 if after(tag) is None else 1 + depth(after(tag))

    return spec, after, depth


def cover_tag(roles: list[tuple[str, str]], chosen: dict[str, list[Pick]], spec: Callable[[str], EventPattern],
              depth: Callable[[str], int]) -> str | None:
    """The sound that carries a scene no bed plays under (None when one does): its first defining sound
    that comes continuously or in bursts, else its first such support sound, else the last defining
    one-shot in the scene's order (the applause after a shot goes on). Its copies come back to back, so
    the scene has no hole (construction.mixing.placement)."""
    if any(p.clip.kind == "bed" for tag, _ in roles for p in chosen.get(tag, [])):
        return None
    for wanted in ("defining", "support"):
        for tag, role in roles:
            if role == wanted and chosen.get(tag) and spec(tag).pattern in ("continuous", "burst"):
                return tag
    shots = [tag for tag, role in roles if role == "defining" and chosen.get(tag)]
    return max(shots, key=depth) if shots else None


def sources_for(sample: Sample, taxonomy: Taxonomy, tag: str) -> int:
    """How many distinct clips one sample draws for `tag`: the scene's events say, else the taxonomy's
    multi_source, else one."""
    home = taxonomy.scene_home.get(sample.scene_id or "")
    spec = home[1].events.get(tag) if home else None
    return (spec.sources if spec and spec.sources else None) or taxonomy.multi_source.get(tag, 1)


def assign_clips(samples: Iterable[Sample], taxonomy: Taxonomy, library: SoundLibrary, licence: str,
                 seed: int, take_s: float = 12.0, min_recordings: int | None = None, *,
                 max_share: float = MAX_RECORDING_SHARE, gapless: Callable[[Clip], bool] | None = None
                 ) -> dict[str, dict[str, list[Pick]]]:
    """sample_id -> {tag: [picks]} for every defining and support sound that has clips (one pick, or
    `sources_for` distinct recordings for a multi-source tag, and spares for a burst or the scene's
    cover sound, marked `spare`: spares_needed; a scene with no bed whose cover sound has a bed clip
    gets that bed instead). A DEFINING sound is dealt only from the recordings homed in the sample's
    category (construction.sounds.partition, `min_recordings` as there: one recording never defines two
    frames) and the procedural classes; a support sound from any. Each sound gets the RECORDING of its
    tag used least so far in the sample's category (ties broken by a seeded shuffle), then the take of
    that recording used least in the category and then in the whole build, so no two samples share a
    take until every take is used. A real recording that already serves `max_share` of the category's
    samples so far (at least MIN_SHARE_USES) is passed over while another, or a procedural class, is
    not; a spare is only dealt from those. A recorded bed with a hole (`gapless` says which; None: none
    has) is dealt only where its sound has nothing else. A clip carrying two of the scene's tags is
    dealt for one only (an applause clip that is also a crowd cheer). Samples are taken in order, so
    extending a build never changes the clips of samples already mixed."""
    ids = recording_ids(library.clips)
    pools = _pools(library, taxonomy, licence, min_recordings)
    position: Counter = Counter()
    uses: dict[str, Counter] = defaultdict(Counter)  # category -> recording -> samples it is in
    take_uses: dict[str, Counter] = defaultdict(Counter)  # category -> (clip, take) -> uses
    all_take_uses: Counter = Counter()  # (clip, take) -> uses in the whole build
    draws: Counter = Counter()  # procedural clip -> draws dealt so far
    seen: Counter = Counter()  # category -> samples dealt so far
    cache: dict[str, list[Clip]] = {}
    out: dict[str, dict[str, list[Pick]]] = {}
    for sample in samples:
        defining, support = scene_sounds(sample, taxonomy)
        used, takes = uses[sample.category], take_uses[sample.category]
        seen[sample.category] += 1
        cap = max(MIN_SHARE_USES, math.floor(max_share * seen[sample.category] + 1e-9))
        chosen: dict[str, list[Pick]] = {}
        orders: dict[str, list[Clip]] = {}

        def deal(tag: str, order: list[Clip], spare: bool, strict: bool = False) -> Pick | None:
            """The next pick of `tag` from `order`; `strict` (a spare, a bed for the cover): only
            recordings under the share cap."""
            taken = {p.recording for picks in chosen.values() for p in picks}
            fresh = [c for c in order if ids[c.clip_id] not in taken]
            under = [c for c in fresh if is_procedural(c) or used[ids[c.clip_id]] < cap]
            if spare or strict:
                fresh = under
            elif not fresh:
                if chosen.get(tag):  # fewer recordings than sources: the sample gets what there is
                    return None
                fresh = order  # every recording already dealt for another tag: share one
            else:
                fresh = under or fresh  # over the share only where nothing else renders the sound
            if not fresh:
                return None
            recording = ids[min(fresh, key=lambda c: used[ids[c.clip_id]]).clip_id]
            candidates = [(c, k) for c in fresh if ids[c.clip_id] == recording
                          for k in range(take_count(c, take_s) or 1)]
            clip, take = min(candidates, key=lambda ck: (takes[(ck[0].clip_id, ck[1])],
                                                         all_take_uses[(ck[0].clip_id, ck[1])]))
            if is_procedural(clip):  # a fresh draw per use: the take is the draw's number
                take = draws[clip.clip_id]
                draws[clip.clip_id] += 1
            return Pick(clip, recording, take, spare)

        for tag in defining + support:
            if tag not in cache:  # once per tag (setdefault would evaluate the select every time)
                cache[tag] = library.select([tag], licence)
            home = scene_category(sample, taxonomy)
            pool = pools.get((home, tag), []) if tag in defining and home else cache[tag]
            if not pool:
                continue
            key = (sample.category, tag)
            order = list(pool)
            if gapless is not None:
                order = [c for c in order if gapless(c)] or order
            random.Random(stable_seed("clips", seed, *key, position[key])).shuffle(order)
            position[key] += 1
            orders[tag] = order
            chosen[tag] = []
            for _ in range(sources_for(sample, taxonomy, tag)):
                pick = deal(tag, order, False)
                if pick is None:
                    break
                chosen[tag].append(pick)
        # more recordings for the one-shots that come many times: bursts and the cover of a bedless scene
        roles = [(t, "defining") for t in defining] + [(t, "support") for t in support if t in chosen]
        spec, _, depth = scene_order(sample, taxonomy, chosen)
        cover = cover_tag(roles, chosen, spec, depth)
        if cover is not None:  # a scene with no bed: the cover's own bed, where it has one, carries it
            first = chosen[cover].pop(0)
            bed = deal(cover, [c for c in orders[cover] if c.kind == "bed" and (gapless is None or gapless(c))],
                       False, strict=True)
            chosen[cover].insert(0, bed or first)
            if bed is not None:
                cover = None
                if is_procedural(first.clip) and first.take == draws[first.clip.clip_id] - 1:
                    draws[first.clip.clip_id] -= 1  # that draw was not used: the next use takes its number
        for tag, picks in chosen.items():
            burst = spec(tag).pattern == "burst"
            if (tag == cover or burst) and len(picks) == 1 and picks[0].clip.kind == "event" \
                    and not is_procedural(picks[0].clip):
                events = [c for c in orders[tag] if c.kind == "event"]  # a spare is a copy: never a bed
                for _ in range(spares_needed(sample, picks[0].clip, burst, tag == cover)):
                    pick = deal(tag, events, True)
                    if pick is None:
                        break
                    picks.append(pick)
                    if is_procedural(pick.clip):  # fresh draws: no more recordings needed
                        break
        for picks in chosen.values():
            for p in picks:
                takes[(p.clip.clip_id, p.take)] += 1
                all_take_uses[(p.clip.clip_id, p.take)] += 1
        for recording in {p.recording for picks in chosen.values() for p in picks}:
            used[recording] += 1
        out[sample.sample_id] = chosen
    return out
