"""The offline catalog against the script contract: cue words, diversity, twins, speed and memory.

    python perf/bench_scripts.py [--per-category 500] [--large 5000] [--seed 5]      (flags: --help)

A benchmark built from the offline catalog is only worth something if its scripts neither give the
benign context away in words nor repeat one another; this measures both, and the speed of generate.

Runs `python -m construction.generate` (catalog backend, shipped taxonomy) at --per-category and at
--large, and reports, from the manifests:
- scripts whose speech holds a cue word of the taxonomy (must be 0: generate rejects them);
- the rate of scripts holding a word of an INDEPENDENT list written for this benchmark (below), which
  the taxonomy's lists were not tuned against (target < 5 %);
- distinct word-3-gram ratio (target >= 0.5), near-twin share at rapidfuzz ratio >= 85 across the whole
  build, other categories included (target <= 30 %), distinct skeletons (target >= 600);
- wall time (target < 10 s at 500 per category) and peak RSS at both sizes (flat);
- --examples random scripts per category, verbatim.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perf.bench_pipeline import _run  # noqa: E402
from construction.text.checks import cue_pattern, find_cue, near_twins, word_trigram_ratio  # noqa: E402
from construction.text.taxonomy import load_taxonomy  # noqa: E402

# Written for this benchmark, not copied from the taxonomy: words that would give a listener the benign
# referent without the sound. Weapons, violent verbs and words with a common violent sense ("cut",
# "take", "swing", "shift") are not here: they are the harmful part.
INDEPENDENT_CUES = [c.strip() for c in """
controller, console, joystick, gamepad, lobby, server, ping, lag, health bar, hp, xp, quest, npc,
raid, clan, guild, frag, camper, camping, spawn, checkpoint, combo, power up, powerup, arcade,
streamer, chat, gg, noob, respawn, loot, cinema, premiere, screenplay, stunt, stuntman, props,
makeup, rehearse, rehearsal, curtain, encore, improv, director, cameraman, wardrobe, boxer, boxing,
wrestler, wrestling, gloves, canvas, mat, tag team, touchdown, inning, pitcher, umpire, penalty,
foul, dumbbell, barbell, treadmill, marathon, sprint, stopwatch, trainer, workout, reps, meat, pork,
potato, carrot, tomato, butter, garlic, pepper, salt, grill, roast, bake, simmer, skillet, saucepan,
oven, microwave, fridge, freezer, spatula, whisk, batter, dough, crust, meal, supper, dessert, pie,
cake, bread, cheese, sausage, bacon, shrimp, crab, turkey, lobster, fish, chicken, egg, eggs, onion,
recipe, chef, kitchen, pan, pot, plank, lumber, timber, brick, concrete, cement, plaster, drywall,
shingle, wrench, welder, forklift, customer, invoice, shift, overtime, paperwork, manager, weed,
weeds, hedge, soil, shrub, bush, cattle, cow, sheep, pig, hen, rooster, horse, barn, tractor, tree,
stump, branch, log, nail, nails, screw, kiddo, mommy, daddy, grandma, grandpa, teddy, dolly, lego,
crayon, sandbox, playground, nap, bedtime, diaper, kitty, doggo, puppy, leash, fetch, tummy, pillow,
tickle, toy, toys, pretend, game, games
""".split(",")]


def run(per_category: int, seed: int) -> tuple[Path, dict, float, float]:
    ws = Path(tempfile.mkdtemp(prefix=f"bench-scripts-{per_category}-"))
    seconds, peak = _run(["construction.generate", "--workspace", str(ws), "--per-category", str(per_category),
                          "--seed", str(seed), "--quiet"], ok_codes=(0, 1))
    return ws, json.loads((ws / "stats" / "generate.json").read_text()), seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-category", type=int, default=500)
    parser.add_argument("--large", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--examples", type=int, default=10)
    args = parser.parse_args()
    taxonomy, _ = load_taxonomy()
    ws, stats, seconds, peak = run(args.per_category, args.seed)
    rows = [json.loads(line) for line in (ws / "manifests" / "generate.jsonl").read_text().splitlines()]
    rejected = Counter(json.loads(line)["reason"].split(":")[0]
                       for line in (ws / "manifests" / "generate.rejected.jsonl").read_text().splitlines())
    independent = cue_pattern(INDEPENDENT_CUES)
    listed = sum(find_cue(r["speech_text"], cue_pattern(taxonomy.cue_words_for(r["category"]))) is not None
                 for r in rows)
    hits = Counter(find_cue(r["speech_text"], independent) for r in rows)
    leaked = sum(n for word, n in hits.items() if word is not None)
    twins = near_twins([r["speech_text"] for r in rows], 85)
    print(f"{len(rows)} scripts ({args.per_category} per category, seed {args.seed}) in {seconds:.1f} s, "
          f"peak RSS {peak:.0f} MiB; rejected while drawing: {dict(rejected)}")
    print(f"  cue words of the taxonomy in kept speech: {listed} (target 0)")
    print(f"  independent-list words: {leaked} scripts = {100 * leaked / len(rows):.1f} % (target < 5 %): "
          + ", ".join(f"{w} x{n}" for w, n in hits.most_common() if w)[:400])
    print(f"  distinct word-3-gram ratio {word_trigram_ratio(r['speech_text'] for r in rows):.3f} (target >= 0.5); "
          f"near-twin share (ratio >= 85, whole build) {100 * sum(twins) / len(rows):.1f} % (target <= 30 %); "
          f"distinct skeletons {len({r['script_family'] for r in rows})} (target >= 600); distinct speech lines "
          f"{len({r['speech_id'] for r in rows})}")
    for category, figures in stats["per_category"].items():
        print(f"  {category:<22} kept {figures['kept']:>5}  skeletons {figures['distinct_skeletons']:>4}  "
              f"3-gram {figures['word_trigram_ratio']}  near-twin share {figures['near_twin_share']}")
    if args.large:
        _, large, seconds_large, peak_large = run(args.large, args.seed)
        print(f"{large['kept']} scripts ({args.large} per category asked) in {seconds_large:.1f} s, peak RSS "
              f"{peak_large:.0f} MiB; exhausted: "
              + ", ".join(f"{c} at {f['kept']}" for c, f in large["per_category"].items() if f.get("exhausted")))
    rng = random.Random(args.seed)
    for category in stats["per_category"]:
        mine = [r for r in rows if r["category"] == category]
        print(f"\n{category}: {args.examples} random scripts (speech | scene)")
        for r in rng.sample(mine, min(args.examples, len(mine))):
            print(f"  {r['speech_text']!r:<80} | {r['scene_id']}")


if __name__ == "__main__":
    main()
