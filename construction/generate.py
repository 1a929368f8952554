"""Stage 1: scenario scripts, N per category, from the offline catalog or an OpenAI-compatible LLM.

A script pairs SPEECH that sounds harmful heard alone with a SCENE (what is heard behind it) that makes
it benign. Both backends feed one loop: draw candidates for a category, reject speech that names its
benign referent (a cue word of the taxonomy: `speech_reveals_context`), the same words twice
(`duplicate_speech`) or a near twin (`near_duplicate`, rapidfuzz ratio >= generate.near_duplicate_ratio),
optionally ask a text-only harm screen (`speech_benign_alone`), stop at N. Rejected rows keep their
reason and twin. The manifest is written whole and atomically at the end; LLM answers are cached on
disk by request hash, so an interrupted or rerun build sends nothing twice. Flags: --help.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from rapidfuzz import fuzz, process
from tqdm import tqdm

from construction.core.cli import add_endpoint, base_parser, keep_config, old_spelling, run_config, run_main
from construction.core.config import Config, GenerateConfig
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, make_sample_id, stable_seed
from construction.text.checks import cue_pattern, find_cue, near_twins, normalise, speech_id, word_trigram_ratio
from construction.text.taxonomy import Category, ScriptSpec, Taxonomy, load_taxonomy
from construction.speech.variants import VariantWriter, cells, line_ids
from construction.core.workspace import ManifestAppender, Rejected, Workspace

STAGE = "generate"
TWIN_SAMPLE = 6000  # near-twin shares are measured on at most this many scripts (a seeded sample)


def _fill(text: str, values: dict[str, str]) -> str:
    """The line with its slots filled; a sentence that starts with a slot starts with a capital."""
    filled = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], text)
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), filled)


SCENE_STALL = 200  # draws of one scene in a row that bring no new script: its lines are spent


def scene_cap(per_category: int, share: float, scenes: int) -> int:
    """The most scripts one scene may carry: `share` of the category's, or an even share where it has
    fewer scenes than that allows."""
    return max(math.ceil(share * per_category - 1e-9), math.ceil(per_category / max(1, scenes)))


def catalog_candidates(category: Category, taxonomy: Taxonomy, seed: int,
                       unrenderable: Collection[str] = (), kept: Sequence[Sample] | None = None,
                       max_per_scene: int | None = None, capacity: Mapping[str, int] | None = None,
                       target: int | None = None) -> Iterator[tuple[ScriptSpec, dict[str, Any]]]:
    """Deterministic draws (same seed and the same kept scripts -> same sequence). Each serves the
    scene of the category with the fewest `kept` scripts (ties in a seeded order) that is under
    `max_per_scene`, whose sounds are under their `capacity` (tag -> the samples its recordings can serve,
    for a sound with no procedural class) and whose last SCENE_STALL draws brought something new; within
    a scene every line paired with it comes once, in a seeded order, before any comes again. A scene that is
    spent (stalled, or its sounds at capacity) short of its share leaves the rest of the category's `target`
    to the scenes still drawing, evenly: the cap rises to that even share, so a small taxonomy still gives its
    count and a large one is balanced as before. Slot fills,
    placement and style are drawn per script. Ends when no scene is left. Scenes in `unrenderable` (the
    library cannot render them, or they are ambiguous) are never drawn."""
    by_scene: dict[str, list] = defaultdict(list)
    for line, home, scene in taxonomy.pairs(category.id, skip=unrenderable):
        by_scene[scene.id].append((line, home, scene))
    if not by_scene:
        raise WorkbenchError(f"category '{category.id}' has no speech line paired with a scene the sound "
                             "library can render and a listener can tell apart: see 'unrenderable_scenes', "
                             "'thin_scenes', 'nonconforming_scenes' (python -m construction.sounds check, or add clips for the missing defining "
                             "sounds) and the ambiguous scenes of 'frames' (generate.allow_ambiguous_scenes)")
    rng = random.Random(stable_seed("catalog", seed, category.id))
    ids = sorted(by_scene)
    rank = {scene: i for i, scene in enumerate(rng.sample(ids, len(ids)))}
    weight = {scene: {t: sources_for_scene(taxonomy, scene, t) for t in by_scene[scene][0][2].background_tags}
              for scene in ids}
    kept = kept if kept is not None else []
    capacity = capacity or {}
    queues: dict[str, list] = {scene: [] for scene in ids}
    count: Counter = Counter()
    tag_uses: Counter = Counter()
    stale: Counter = Counter()
    seen, last = 0, None
    while True:
        for sample in kept[seen:]:  # what the last draw brought
            count[sample.scene_id] += 1
            tag_uses.update(weight.get(sample.scene_id, {}))
            stale[sample.scene_id] = 0
        if last is not None and len(kept) == seen:
            stale[last] += 1
        seen = len(kept)
        live = [scene for scene in ids if stale[scene] < SCENE_STALL
                and all(tag_uses[t] + n <= capacity[t] for t, n in weight[scene].items() if t in capacity)]
        cap = max_per_scene
        if cap is not None and target is not None and live:  # what spent scenes left, over the live ones
            left = target - sum(count[scene] for scene in ids if scene not in live)
            cap = max(cap, math.ceil(left / len(live)))
        open_ = [scene for scene in live if cap is None or count[scene] < cap]
        if not open_:
            return
        last = min(open_, key=lambda scene: (count[scene], rank[scene]))
        if not queues[last]:
            queues[last] = list(by_scene[last])
            rng.shuffle(queues[last])
        line, home, scene = queues[last].pop()
        fills = {slot: rng.choice(taxonomy.slot_values(slot, home, scene)) for slot in line.slots()}
        spec = ScriptSpec(speech_text=_fill(line.text, fills), scene_id=scene.id, script_family=line.id,
                          context=scene.context, background_tags=scene.background_tags,
                          placement=rng.choice(scene.placements), benign_reason=scene.benign_reason,
                          speaker_style=rng.choice(line.styles), key_words=list(line.key_words))
        yield spec, {"backend": "catalog", "speech_line": line.id, "fills": fills}


def sources_for_scene(taxonomy: Taxonomy, scene_id: str, tag: str) -> int:
    """Recordings one sample of the scene draws for `tag` (construction.sounds.scenes.sources_for)."""
    spec = taxonomy.scene_home[scene_id][1].events.get(tag)
    return (spec.sources if spec and spec.sources else None) or taxonomy.multi_source.get(tag, 1)


def tag_capacity(library, taxonomy: Taxonomy, licence: str, per_category: int, min_recordings: int
                 ) -> dict[str, dict[str, int]]:
    """category -> tag -> how many of its samples the tag's admitted recordings can serve, each in at most
    MAX_RECORDING_SHARE of them, for every sound some recording but no procedural class renders there
    (a defining sound from the recordings homed in the category: construction.sounds.partition)."""
    from construction.sounds.partition import recording_ids
    from construction.sounds.scenes import MAX_RECORDING_SHARE, MIN_SHARE_USES, _pools, _recordings

    each = max(MIN_SHARE_USES, math.floor(MAX_RECORDING_SHARE * per_category + 1e-9))
    pools, ids = _pools(library, taxonomy, licence, min_recordings), recording_ids(library.clips)
    out: dict[str, dict[str, int]] = {}
    for category in taxonomy.categories:
        defining = {t for scene in category.scenes for t in scene.defining}
        tags = {t for scene in category.scenes for t in scene.background_tags}
        counts = {t: _recordings(pools.get((category.id, t), []) if t in defining else library.select([t], licence), ids)
                  for t in tags}
        out[category.id] = {t: n * each for t, n in counts.items() if 0 < n < 10 ** 6}
    return out


# --- the stage ------------------------------------------------------------------------------------

def generate_category(category: Category, taxonomy: Taxonomy, cfg: GenerateConfig, seed: int,
                      llm, screen, taxonomy_hash: str, out: ManifestAppender,
                      unrenderable: Collection[str] = (), capacity: Mapping[str, int] | None = None
                      ) -> tuple[dict[str, int], list[Kept]]:
    """Writes the category's scripts and rejected rows to `out` as they come; returns its counts and
    what the diversity figures need of the kept scripts. The catalog balances the category's scenes
    (generate.max_scene_share) within the sounds' `capacity` (tag_capacity)."""
    from construction.text.llm import llm_candidates

    kept: list[Sample] = []
    rejects: list[Rejected] = []
    counts = {"draws": 0, "exact_duplicates": 0, "speech_too_long": 0, "speech_reveals_context": 0,
              "duplicate_speech": 0, "near_duplicate": 0, "speech_benign_alone": 0, "exhausted": 0}
    seen: set[str] = set()
    cues = cue_pattern(taxonomy.cue_words_for(category.id))
    # what kept speech (and, for the LLM, the few-shot lines it must not copy) is compared against
    keys: list[str] = []
    twins: list[str] = []
    same_words: dict[str, str] = {}
    if llm is not None:
        for example in category.few_shot:
            keys.append(normalise(example.text))
            twins.append(f"a few-shot example ({example.text!r})")
            same_words[normalise(example.text)] = twins[-1]
    if llm is None:
        scenes = len({scene.id for _, _, scene in taxonomy.pairs(category.id, skip=unrenderable)})
        candidates = catalog_candidates(category, taxonomy, seed, unrenderable, kept,
                                        scene_cap(cfg.per_category, cfg.max_scene_share, scenes), capacity,
                                        cfg.per_category)
    else:
        candidates = llm_candidates(category, taxonomy, llm, cfg, kept, rejects, unrenderable)
    max_draws = cfg.per_category * cfg.max_draws_per_sample
    rejected = 0
    since_new = 0  # draws since the last new script: the catalog is exhausted when this grows large

    def reject(sample: Sample, code: str, detail: str) -> None:
        counts[code] += 1
        rejects.append(Rejected(sample, f"{code}: {detail}"))

    for spec, provenance in candidates:
        rejected += len(rejects)
        for row in rejects:  # written now, not held: a big build draws many times what it keeps
            out.write(row)
        rejects.clear()  # the same list object the LLM candidates append to
        if len(kept) >= cfg.per_category or counts["draws"] >= max_draws:
            break
        if since_new >= cfg.stall_draws:
            counts["exhausted"] = 1
            break
        counts["draws"] += 1
        since_new += 1
        sample_id = make_sample_id(category.id, spec.speech_text, spec.context, spec.placement,
                                   spec.background_tags, spec.speaker_style)
        if sample_id in seen:
            counts["exact_duplicates"] += 1
            continue
        seen.add(sample_id)
        sample = Sample(sample_id=sample_id, category=category.id, speech_id=speech_id(spec.speech_text),
                        frames=taxonomy.scene_frames(spec.scene_id), **spec.model_dump(),
                        provenance={STAGE: {**provenance, "seed": seed, "taxonomy": taxonomy_hash}})
        words = len(spec.speech_text.split())
        if words > cfg.max_speech_words:  # a runaway LLM answer would become minutes of audio
            reject(sample, "speech_too_long", f"{words} words > generate.max_speech_words {cfg.max_speech_words}")
            continue
        cue = find_cue(spec.speech_text, cues)
        if cue is not None:  # the words name the benign referent: a text model needs no sound to see it
            reject(sample, "speech_reveals_context", repr(cue))
            continue
        key = normalise(spec.speech_text)
        if key in same_words:  # the same skeleton and fills (or words) again, with another scene
            reject(sample, "duplicate_speech", f"the same words as {same_words[key]}")
            continue
        match = process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=cfg.near_duplicate_ratio)
        if match is not None:
            reject(sample, "near_duplicate", f"speech ratio {match[1]:.0f} with {twins[match[2]]}")
            continue
        if screen is not None:
            verdict = screen.judge(spec.speech_text)
            sample.provenance[STAGE]["harm_screen"] = verdict
            if verdict["class"] == "3_benign":
                reject(sample, "speech_benign_alone", f"the harm screen ({verdict['model']}) judged it "
                                                      f"benign heard alone: {verdict['reason']}")
                continue
        kept.append(sample)
        keys.append(key)
        twins.append(f"{sample.sample_id} ({sample.speech_text!r})")
        same_words[key] = twins[-1]
        out.write(sample)
        since_new = 0
    if llm is None and len(kept) < cfg.per_category and counts["draws"] < max_draws:
        counts["exhausted"] = 1  # every scene is spent or at its cap
    rejected += len(rejects)
    for row in rejects:
        out.write(row)
    return {"kept": len(kept), "rejected": rejected, **counts}, \
        [Kept(s.speech_text, s.speech_id, s.script_family, s.sample_id, s.scene_id) for s in kept]


class Kept(NamedTuple):
    speech_text: str
    speech_id: str | None
    script_family: str | None
    sample_id: str
    scene_id: str | None = None


def diversity(kept: dict[str, list[Kept]], threshold: float, seed: int) -> dict[str, dict[str, Any]]:
    """Per category: distinct skeletons and speech lines, the word-3-gram ratio, and the share of
    scripts with a near twin (ratio >= threshold) anywhere in the build, other categories included."""
    everything = [(c, s.speech_text) for c, samples in kept.items() for s in samples]
    if len(everything) > TWIN_SAMPLE:
        everything = random.Random(stable_seed("twins", seed)).sample(everything, TWIN_SAMPLE)
    has_twin = near_twins([text for _, text in everything], threshold)
    out = {}
    for category, samples in kept.items():
        flags = [flag for (c, _), flag in zip(everything, has_twin) if c == category]
        scenes = Counter(s.scene_id for s in samples)
        top = scenes.most_common(1)[0] if scenes else (None, 0)
        out[category] = {"scenes_used": len(scenes), "top_scene": top[0],
                         "top_scene_share": round(top[1] / len(samples), 4) if samples else None,
                         "distinct_skeletons": len({s.script_family for s in samples}),
                         "distinct_speech": len({s.speech_id for s in samples}),
                         "word_trigram_ratio": word_trigram_ratio(s.speech_text for s in samples),
                         "near_twin_share": round(sum(flags) / len(flags), 4) if flags else None}
    return out


def run_generate(ws: Workspace, config: Config, progress: bool = True, restart: bool = False) -> dict[str, Any]:
    """Writes the manifest whole; a run that would drop scripts an earlier run made (another taxonomy
    file, another LLM answer) is refused unless `restart`."""
    from construction.text.llm import HarmScreen, make_llm
    from construction.sounds.scenes import clips_by_tag, open_library, thin_scenes, unrenderable_scenes
    from construction.text.frames import distinctiveness

    cfg = config.generate
    taxonomy, taxonomy_hash = load_taxonomy(cfg.taxonomy)
    category_ids = cfg.categories or [c.id for c in taxonomy.categories]
    categories = [taxonomy.category(c) for c in category_ids]
    # only scenes whose every defining sound has a clip under the release licence are paired: a script
    # the mix cannot render is never written, synthesised and then dropped
    # the decoding check is remembered in the workspace's cache, where the mix stage finds it (one decode a build)
    library = open_library(config.mix.sounds, verified=ws.cache_dir("library"))
    unrenderable = unrenderable_scenes(taxonomy, library, config.release_licence, config.mix.min_clips_per_defining_tag)
    # nor scenes the mix would refuse as too thin for a release (mix.min_clips_per_defining_tag recordings)
    thin = thin_scenes(taxonomy, library, config.release_licence, config.mix.min_clips_per_defining_tag)
    # and, unless allowed, only scenes a listener can place in one of their frames by ear
    defining = {t for c in taxonomy.categories for s in c.scenes for t in s.defining}
    rendered = {tag for tag, clips in clips_by_tag(library, defining, config.release_licence).items() if clips}
    frames = distinctiveness(taxonomy, rendered, category_ids)
    ambiguous = {scene for c in frames["per_category"].values() for scene in c["ambiguous"]}
    # and only scenes whose text names no sound they do not render (construction.text.sound_words)
    from construction.text.sound_words import nonconforming_scenes, rendered_tags

    every = {t for c in taxonomy.categories for s in c.scenes for t in s.defining + s.support}
    nonconforming = nonconforming_scenes(taxonomy, rendered_tags(library, every, config.release_licence))
    skipped = (set(unrenderable) | set(thin) | set(nonconforming)
               | (set() if cfg.allow_ambiguous_scenes else ambiguous))
    # no real recording may serve more than its share of a category: scenes of a sound with few
    # recordings and no procedural class are dealt no more lines than those recordings can serve
    capacity = tag_capacity(library, taxonomy, config.release_licence, cfg.per_category,
                            config.mix.min_clips_per_defining_tag)
    with ws.lock():
        llm = make_llm(cfg, ws, config.seed) if cfg.backend == "openai" else None
        screen = HarmScreen(cfg.harm_screen, ws, config.seed) if cfg.harm_screen else None
        started = time.monotonic()
        per_category: dict[str, dict[str, int]] = {}
        kept: dict[str, list[Kept]] = {}
        # a variants build writes each line as its variants (construction.speech.variants): lines are compared
        made = set() if restart else line_ids(ws.read_samples(STAGE))
        with ws.replacing(STAGE) as out:
            if config.synthesize.variants is not None:
                from construction.synthesize import voice_bank

                out = VariantWriter(out, config.synthesize.variants, voice_bank(config.synthesize), config.seed)
            for category in tqdm(categories, desc=STAGE, unit="category", disable=not progress):
                counts, kept[category.id] = generate_category(category, taxonomy, cfg, config.seed, llm, screen,
                                                              taxonomy_hash, out, skipped, capacity.get(category.id))
                per_category[category.id] = {**counts, "shortfall": cfg.per_category - counts["kept"]}
            lost = sorted(made - {k.sample_id for ks in kept.values() for k in ks})
            if lost:  # raised inside the block: the manifest stays as it was
                shown = ", ".join(lost[:3]) + (" ..." if len(lost) > 3 else "")
                raise WorkbenchError(f"this run would drop {len(lost)} of the {len(made)} scripts in "
                                     f"{ws.manifest_path(STAGE)} ({shown}): the taxonomy or the LLM's answers changed "
                                     "since they were made; use a fresh --workspace, or pass --restart to replace them")
        for category, figures in diversity(kept, cfg.near_duplicate_ratio, config.seed).items():
            per_category[category].update(figures)
        everything = [k for ks in kept.values() for k in ks]
        stats = {"stage": STAGE, "backend": cfg.backend, "per_category_target": cfg.per_category,
                 "kept": sum(c["kept"] for c in per_category.values()),
                 "rejected": sum(c["rejected"] for c in per_category.values()), "per_category": per_category,
                 "distinct_skeletons": len({k.script_family for k in everything}),
                 "distinct_speech": len({k.speech_id for k in everything}),
                 "word_trigram_ratio": word_trigram_ratio(k.speech_text for k in everything),
                 "near_twin_ratio": cfg.near_duplicate_ratio,
                 "unrenderable_scenes": {scene: unrenderable[scene] for c in categories for scene in
                                         (s.id for s in c.scenes) if scene in unrenderable},
                 "thin_scenes": {scene: thin[scene] for c in categories for scene in (s.id for s in c.scenes)
                                 if scene in thin},
                 "nonconforming_scenes": {scene: nonconforming[scene] for c in categories
                                          for scene in (s.id for s in c.scenes) if scene in nonconforming},
                 "min_recordings_per_defining_sound": config.mix.min_clips_per_defining_tag,
                 # per category: scenes, distinctive scenes and their share, ambiguous scenes and what they share
                 "frames": {**frames, "ambiguous_scenes_used": cfg.allow_ambiguous_scenes},
                 "llm_requests_sent": (llm.sent if llm else 0) + (screen.llm.sent if screen else 0),
                 "variants_per_line": len(cells(config.synthesize.variants)) if config.synthesize.variants else 1,
                 "seconds_this_run": round(time.monotonic() - started, 2)}
        ws.write_stats(STAGE, stats)
    return stats


def add_script_options(parser: argparse.ArgumentParser) -> None:
    """The flags of the script stage, on every command that runs it (generate, pipeline): how many
    scripts, which backend, and the openai backend's endpoint (config generate.llm_base_url,
    generate.llm_model, generate.api_key_env)."""
    defaults = GenerateConfig()
    parser.add_argument("--per-category", type=int,
                        help=f"scripts per category (default: config generate.per_category, else "
                             f"{defaults.per_category})")
    parser.add_argument("--backend", choices=["catalog", "openai"],
                        help="where scripts come from: the offline catalog or an LLM "
                             f"(default: config generate.backend, else {defaults.backend})")
    # absent: the config's generate.llm_base_url, llm_model, api_key_env
    add_endpoint(parser, "script LLM (--backend openai)", unset={
        "base_url": "config generate.llm_base_url", "model": f"config generate.llm_model, else {defaults.llm_model}"},
                 key_env=defaults.api_key_env, key_config="generate.api_key_env")
    old_spelling(parser, "--llm-base-url", "--base-url")
    old_spelling(parser, "--llm-model", "--model")


def script_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """(config overrides, flag names) for run_config from the flags add_script_options added."""
    overrides = {"generate.per_category": args.per_category, "generate.backend": args.backend,
                 "generate.llm_base_url": args.base_url, "generate.llm_model": args.model,
                 "generate.api_key_env": args.api_key_env}
    flags = {"generate.llm_base_url": "--base-url", "generate.llm_model": "--model",
             "generate.api_key_env": "--api-key-env"}
    return overrides, flags


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.generate", __doc__.splitlines()[0], env=GENERATE_ENV)
    add_script_options(parser)
    parser.add_argument("--taxonomy", help="taxonomy YAML (default: the shipped one)")
    parser.add_argument("--categories", help="comma-separated category ids (default: all)")
    return parser


GENERATE_ENV = ("OPENAI_API_KEY",)  # the default --api-key-env, read with --backend openai


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides, flags = script_overrides(args)
    config = run_config(args, {
        **overrides, "generate.taxonomy": args.taxonomy,
        "generate.categories": args.categories.split(",") if args.categories else None}, flags)
    ws = Workspace(args.workspace)
    with ws.lock():  # first, so a run refused by the lock leaves config.yaml as it was
        keep_config(ws, config, args, runs=(STAGE,))
        stats = run_generate(ws, config, progress=not args.quiet, restart=args.restart)
    print_generate_summary(stats)
    return 1 if any(c["shortfall"] > 0 for c in stats["per_category"].values()) else 0


def print_generate_summary(stats: dict[str, Any]) -> None:
    variants = stats.get("variants_per_line", 1)
    each = f" (each in {variants} voice variants: {stats['kept'] * variants} rows)" if variants > 1 else ""
    print(f"generate ({stats['backend']}): {stats['kept']} scripts, {stats['rejected']} rejected{each}")
    for cat, c in stats["per_category"].items():
        note = f"  SHORT BY {c['shortfall']}" if c["shortfall"] > 0 else ""
        if c.get("exhausted"):
            note += f" (exhausted: {c['kept']} distinct scripts are all this category's catalog gives)"
        print(f"  {cat:<24} {c['kept']:>6} kept  {c.get('distinct_skeletons', 0):>5} skeletons  "
              f"{c['near_duplicate'] + c['duplicate_speech']:>5} duplicates  {c['speech_reveals_context']:>5} "
              f"revealing{note}")
    print(f"  {stats['distinct_skeletons']} skeletons, {stats['distinct_speech']} distinct speech lines, "
          f"word-3-gram ratio {stats['word_trigram_ratio']}")
    for scene, missing in stats.get("unrenderable_scenes", {}).items():
        print(f"  scene {scene} not used: no clip for {', '.join(missing)}")
    for scene, thin in stats.get("thin_scenes", {}).items():
        counts = ", ".join(f"{tag} {n}" for tag, n in thin.items())
        print(f"  scene {scene} not used: too few recordings ({counts}; mix.min_clips_per_defining_tag "
              f"{stats['min_recordings_per_defining_sound']})")
    for scene, problems in stats.get("nonconforming_scenes", {}).items():
        print(f"  scene {scene} not used: its text names sounds it does not render ({problems[0]}"
              f"{f'; {len(problems) - 1} more' if len(problems) > 1 else ''})")
    frames = stats.get("frames")
    if frames and frames["scenes"]:
        ambiguous = sum(len(c["ambiguous"]) for c in frames["per_category"].values())
        use = "used (generate.allow_ambiguous_scenes)" if frames["ambiguous_scenes_used"] else "not used"
        print(f"  distinctive scenes: {frames['distinctive']}/{frames['scenes']} "
              f"({frames['distinctive_share']:.0%}); {ambiguous} ambiguous, {use}: stats frames.per_category")


if __name__ == "__main__":
    run_main(main, sys.argv[1:])
