"""The mix stage's figures (stats/mix.json): the dominance, click and repeat checks per category, the
twins' masking match, and how evenly clips, recordings and takes are used across categories and scenes."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from construction.core.config import Config
from construction.core.runner import print_summary
from construction.core.workspace import Workspace
from construction.mixing.tracks import MAX_REPEATS
from construction.mixing.twin import twin_stats

STAGE = "mix"
# every rendered track is checked (construction.mixing.levels.steps): the mixture, its scene alone, the irrelevant
# twin, the danger twin and the danger scene alone
TWIN_CLICKED = ("twin", "danger", "danger_scene")  # the twins' tracks (the danger scene with them)
CLICKED = ("mixture", "scene", *TWIN_CLICKED)  # their keys in provenance.mix.clicks
CLICK_TRACKS = tuple(f"clicks_{track}" for track in CLICKED)  # and in stats/mix.json


def mix_stats(ws: Workspace, config: Config, procedural: frozenset[str] = frozenset(),
              twins_after_gate: bool = False) -> dict[str, Any]:
    """What was mixed: per category and scene the distinct clips, RECORDINGS (clips cut from one recording
    count once) and TAKES, and the top clip's and top real recording's share of the samples (a procedural
    class, a new draw each time, apart: its top one and share); per category and defining sound the
    recordings, takes and procedural draws (`procedural`: the clip ids that are procedural classes); levels
    and scene-alone time; the scenes' silences in the lead-in and under the speech; the twins' figures
    (construction.mixing.twin.twin_stats), unless the WER stage makes them (`twins_after_gate`: stats/wer.json
    has them)."""
    per_category: dict[str, Counter] = defaultdict(Counter)
    per_scene: dict[str, Counter] = defaultdict(Counter)
    recordings: dict[str, Counter] = defaultdict(Counter)
    classes: dict[str, Counter] = defaultdict(Counter)  # category -> procedural class -> samples
    takes: dict[str, set] = defaultdict(set)
    defining: dict[str, dict[str, dict[str, set]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(set)))
    n_category: Counter = Counter()
    n_scene: Counter = Counter()
    snrs, alone = [], []
    checks: dict[str, Counter] = defaultdict(Counter)  # category -> dominance, clicks, repeats
    for s in ws.read_samples(STAGE):
        n_category[s.category] += 1
        check = checks[s.category]
        prov = s.provenance.get(STAGE, {})
        dom = prov.get("dominance")
        if dom is not None:
            check["measured"] += 1
            first = not prov.get("redrawn") and "support_lowered_db" not in dom
            check["dominant_as_drawn"] += first
            check["support_lowered"] += "support_lowered_db" in dom
            check["redrawn"] += bool(prov.get("redrawn"))
        check["redrawn_for_clicks"] += bool(prov.get("redrawn_for_clicks"))  # a draw with a click is drawn again
        holes = prov.get("silences", [])  # heldout.silences: runs >= 0.5 s in the lead-in or under the speech
        check["scenes_with_a_silence"] += bool(holes)
        check["longest_silence_ms"] = max(check["longest_silence_ms"], int(1000 * max([h[1] for h in holes] or [0])))
        for track, n in prov.get("clicks", {}).items():
            check[{"in_sources": "steps_in_sources", "beats": "beats"}.get(track, f"clicks_{track}")] += n
        copies: Counter = Counter()
        for sound in s.mix.sounds:
            if sound.clip_id not in procedural and sound.kind != "bed":  # bursts count too (issue 48)
                copies[sound.recording or sound.clip_id] += len(sound.onsets_s)
        check["samples_repeating_a_recording_over_3"] += bool(copies) and max(copies.values()) > MAX_REPEATS
        n_scene[s.mix.scene_id or "-"] += 1
        for clip in {sound.clip_id for sound in s.mix.sounds}:
            per_category[s.category][clip] += 1
            per_scene[s.mix.scene_id or "-"][clip] += 1
        for recording in {sound.recording or sound.clip_id for sound in s.mix.sounds}:
            # a procedural class is a fresh draw each time, not a recording heard again: counted apart
            (classes if recording in procedural else recordings)[s.category][recording] += 1
        for sound in s.mix.sounds:
            take = (sound.clip_id, sound.take)
            if sound.role == "defining":
                use = defining[s.category][sound.tag]
                use["procedural" if sound.clip_id in procedural else "recordings"].add(sound.recording or sound.clip_id)
                use["draws" if sound.clip_id in procedural else "takes"].add(take)
            if sound.clip_id not in procedural:  # a procedural draw is not a take of a recording
                takes[s.category].add(take)
        snrs.append(s.mix.snr_db)
        alone.append(s.mix.scene_alone_s)

    def use(counts: dict[str, Counter], totals: Counter) -> dict[str, dict[str, Any]]:
        return {key: {"samples": totals[key], "distinct_clips": len(c),
                      "top_clip": c.most_common(1)[0][0], "top_clip_share": round(c.most_common(1)[0][1] / totals[key], 3)}
                for key, c in sorted(counts.items())}

    by_category = use(per_category, n_category)
    for category, row in by_category.items():
        top, n = (recordings[category].most_common(1) or [(None, 0)])[0]
        row.update({"distinct_recordings": len(recordings[category]), "distinct_takes": len(takes[category]),
                    "top_recording": top, "top_recording_share": round(n / n_category[category], 3)})
        if classes[category]:  # what the share of real recordings leaves out
            top, n = classes[category].most_common(1)[0]
            row.update({"top_procedural_class": top, "top_procedural_share": round(n / n_category[category], 3)})
    per_sound = {category: {tag: {"recordings": len(u["recordings"]), "takes": len(u["takes"]),
                                  "procedural_classes": len(u["procedural"]), "procedural_draws": len(u["draws"])}
                            for tag, u in sorted(tags.items())}
                 for category, tags in sorted(defining.items())}
    cap = config.mix.max_clip_share
    rejected = Counter(r.sample.category for r in ws.read_rejected(STAGE) if r.reason.startswith("defining_not_dominant"))
    quality = {}
    for category, c in sorted(checks.items()):
        row = {k: c[k] for k in ("measured", "dominant_as_drawn", "support_lowered", "redrawn")}
        row["rejected_not_dominant"] = rejected[category]
        row["share_dominant_as_drawn"] = round(c["dominant_as_drawn"] / c["measured"], 3) if c["measured"] else None
        row.update({k: c[k] for k in (*CLICK_TRACKS, "redrawn_for_clicks", "steps_in_sources", "beats",
                                      "samples_repeating_a_recording_over_3", "scenes_with_a_silence",
                                      "longest_silence_ms")})
        quality[category] = row
    return {"scene_checks_per_category": quality,
            "clicks": sum(c[k] for c in checks.values() for k in CLICK_TRACKS),
            "redrawn_for_clicks": sum(c["redrawn_for_clicks"] for c in checks.values()),
            "beats": sum(c["beats"] for c in checks.values()),  # falls of a sum its parts do not make (levels.clicks_and_beats)
            "samples_repeating_a_recording_over_3": sum(c["samples_repeating_a_recording_over_3"] for c in checks.values()),
            "scenes_with_a_silence": sum(c["scenes_with_a_silence"] for c in checks.values()),
            **(twin_stats(ws.read_samples(STAGE)) if (config.mix.irrelevant_twin or config.mix.danger_twin)
               and not twins_after_gate else {}),
            **({"twins": "made by the WER stage once each mixture passes its gate: stats/wer.json"}
               if twins_after_gate else {}),
            "clips_per_category": by_category, "clips_per_scene": use(per_scene, n_scene),
            "defining_sounds_per_category": per_sound,
            "categories_over_clip_share": sorted(c for c, u in by_category.items() if u["top_clip_share"] > cap),
            "categories_over_recording_share": sorted(c for c, u in by_category.items()
                                                      if u["top_recording_share"] > cap),
            "snr_db": {"min": min(snrs), "max": max(snrs), "mean": round(float(np.mean(snrs)), 2)} if snrs else {},
            "scene_alone_s": {"min": min(alone), "share_at_least_1_5_s": round(float(np.mean(np.array(alone) >= 1.5)), 3)}
            if alone else {}}


def print_mix_summary(stats: dict[str, Any]) -> None:
    print_summary(stats)
    for category, use in stats.get("clips_per_category", {}).items():
        drawn = (f"; procedural {use['top_procedural_class']} (a new draw each time) in "
                 f"{100 * use['top_procedural_share']:.0f} %" if "top_procedural_class" in use else "")
        print(f"  {category:<24} {use['distinct_recordings']:>4} recordings, {use['distinct_takes']:>4} takes, top "
              f"recording {use['top_recording']} in {100 * use['top_recording_share']:.0f} % of its samples{drawn}")
