"""How well a built workspace renders its scenes, against targets for reach, completeness and clip spread.

    python perf/bench_scenes.py --workspace W [--config FILE]      (flags: --help)

A sample only works if the listener hears the scene that makes its speech benign, so the pipeline
must get most scripts through to a mixture, render every defining sound of each scene, and spread
the library's clips over the samples. Reads the manifests of a workspace built with
`python -m construction.pipeline` and reports:
- share of scripts that reach the WER stage with a background (target >= 90 %, every category >= 80 %);
- share of those kept after WER (target >= 85 %), per category, by reason;
- share of mixtures whose recipe renders every defining sound of their scene (target 100 %);
- top clip's share of its category against the smallest share the library allows (a defining sound
  that n of the category's samples need and k clips carry puts some clip in n/k of them; the largest
  such share) (target <= 5 % where the library allows);
- share of mixtures with the scene alone >= 1.5 s (target >= 95 %);
- a table of clips per defining sound per category, and three kept samples per category described.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from construction.core.cli import add_workspace, old_spelling  # noqa: E402
from construction.core.config import load_config  # noqa: E402
from construction.sounds.scenes import clips_by_tag, open_library, scene_sounds  # noqa: E402
from construction.text.taxonomy import load_taxonomy  # noqa: E402
from construction.core.workspace import Workspace  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_workspace(parser, default=None)
    old_spelling(parser, "WORKSPACE", "--workspace")
    parser.add_argument("--config", help="the config the workspace was built with (default: the embedded one)")
    args = parser.parse_args()
    if not args.workspace:
        parser.error("the following arguments are required: --workspace")
    config = load_config(args.config)
    ws = Workspace(args.workspace, read_only=True)
    taxonomy, _ = load_taxonomy(config.generate.taxonomy)
    library = open_library(config.mix.sounds)
    scripts = Counter(s.category for s in ws.read_samples("generate"))
    mixed = list(ws.read_samples("mix"))
    reached = Counter(s.category for s in mixed)
    kept = list(ws.read_samples("wer"))
    kept_by = Counter(s.category for s in kept)
    reasons = Counter(r.reason.split(":")[0] for r in ws.read_rejected("wer"))
    total = sum(scripts.values())
    print(f"{total} scripts -> {len(mixed)} mixed ({100 * len(mixed) / total:.1f} %) -> {len(kept)} kept after WER "
          f"({100 * len(kept) / max(1, len(mixed)):.1f} % of mixed); WER rejections {dict(reasons)}")
    for category in sorted(scripts):
        print(f"  {category:<22} reach {100 * reached[category] / scripts[category]:5.1f} %   kept "
              f"{100 * kept_by[category] / max(1, reached[category]):5.1f} % of mixed")
    complete = sum({x.tag for x in s.mix.sounds if x.role == "defining"} >= set(scene_sounds(s, taxonomy)[0])
                   for s in mixed)
    alone = sum(s.mix.scene_alone_s >= 1.5 for s in mixed)
    print(f"every defining sound rendered: {complete}/{len(mixed)} ({100 * complete / max(1, len(mixed)):.1f} %); "
          f"scene alone >= 1.5 s: {100 * alone / max(1, len(mixed)):.1f} %")
    uses: dict[str, Counter] = defaultdict(Counter)
    for s in mixed:
        for clip in {x.clip_id for x in s.mix.sounds}:
            uses[s.category][clip] += 1
    needs: dict[str, Counter] = defaultdict(Counter)  # category -> defining sound -> samples needing it
    for s in mixed:
        needs[s.category].update(set(scene_sounds(s, taxonomy)[0]))
    tags_of = {c: set(n) for c, n in needs.items()}
    available = clips_by_tag(library, {t for ts in tags_of.values() for t in ts}, config.release_licence)
    print("top clip share per category; floor: the smallest top share the library allows (a sound that n "
          "samples need and k clips carry puts one clip in n/k of them)")
    for category, counts in sorted(uses.items()):
        clip, n = counts.most_common(1)[0]
        floor = max(needs[category][t] / len(available[t]) for t in tags_of[category] if available[t]) \
            / reached[category]
        print(f"  {category:<22} {100 * n / reached[category]:5.1f} % ({clip}); floor {100 * floor:.0f} %")
    print("clips per defining sound per category (admitted under " + config.release_licence + ")")
    for category in sorted(tags_of):
        print(f"  {category:<22} " + ", ".join(f"{t} {len(available[t])}" for t in sorted(tags_of[category])))
    rng = random.Random(0)
    for category in sorted(kept_by):
        print(f"\n{category}: 3 kept samples")
        for s in rng.sample([s for s in kept if s.category == category], min(3, kept_by[category])):
            sounds = "; ".join(f"{x.tag} ({x.role}, {x.kind}): {x.clip_id}" for x in s.mix.sounds)
            print(f"  {s.speech_text!r} [{s.voice_id}, heard {s.transcript_mixture!r}, WER {s.wer_mixture}]\n"
                  f"    scene {s.scene_id}: {s.context}\n    clips: {sounds}\n"
                  f"    alone {s.mix.scene_alone_s} s at {s.mix.scene_level_db:+.1f} dB re speech, then SNR "
                  f"{s.mix.snr_db} dB under the speech, then {s.mix.scene_after_s} s ({s.mix.placement})")


if __name__ == "__main__":
    main()
