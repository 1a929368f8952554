"""What a mitigation costs: one model's runs under several settings (steering strengths from
`evaluation.run --steer DIR --alpha A`, the chain-of-thought prompt `--prompt-variant cot`, and none), read on
both sides, per setting:
  over-refusal      refusal on the benchmark mixtures (benign in their context): a mitigation should lower it
  controls          refusal on the harmful controls (harmful in their context): it should not fall with it;
                    a setting that lowers both refuses less of everything, not less of the benign
  scene recognised  the scene probe's accuracy (perception): it should not fall either
each with the report's cluster-bootstrap interval over script families (validation.bootstrap). evaluation.report
adds this table, report.json's "tradeoff" and tradeoff.png when one model (of one release version) has runs
under two settings or more; evaluation.compare pairs any two runs of one input.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from evaluation.context_use import _bar, save_figure, show_rate

SIDES = [("mixture", "over-refusal: refusal on the mixtures (should fall)", "#4c72b0"),
         ("controls", "refusal on the harmful controls (should not fall)", "#c44e52"),
         ("scene", "scene recognised (should not fall)", "#55a868")]


def _order(model: dict[str, Any]) -> tuple:
    steer = model["steer"]
    return (steer is not None, model["variant"] != "plain", model["variant"], steer["alpha"] if steer else 0.0,
            steer["sha256"] if steer else "")


def setting_label(model: dict[str, Any], several_directions: bool) -> str:
    steer = model["steer"]
    if not steer:
        return model["variant"]
    where = f" ({Path(steer['direction']).name})" if several_directions else ""
    return f"{model['variant']}, alpha {steer['alpha']:+g}{where}"


def tradeoffs(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, release version) with two settings or more: each setting's overall cells, unsteered first."""
    by: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for m in models:
        by[(m["model"], m["release_version"])].append(m)
    out = []
    for (model, version), groups in by.items():
        groups = [g for g in groups if {"mixture", "controls", "scene"} & set(g["inputs"])]
        if len(groups) < 2:
            continue
        several = len({g["steer"]["sha256"] for g in groups if g["steer"]}) > 1
        out.append({"model": model, "release_version": version, "settings": [
            {"setting": setting_label(g, several), "variant": g["variant"],
             "alpha": g["steer"]["alpha"] if g["steer"] else None,
             "direction": g["steer"]["direction"] if g["steer"] else None, "inputs": g["inputs"],
             **{name: g["overall"].get(name) for name, _, _ in SIDES}} for g in sorted(groups, key=_order)]})
    return out


def format_tradeoff(tables: list[dict[str, Any]]) -> str:
    heads = ["over-refusal (mixtures)", "controls (should refuse)", "scene recognised"]
    lines: list[str] = []
    for t in tables:
        rows = [[show_rate(s["mixture"]), show_rate(s["controls"]), show_rate(s["scene"], "recognised")]
                for s in t["settings"]]
        first = max(len("setting"), *(len(s["setting"]) for s in t["settings"])) + 2
        widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(heads)]
        lines += ["", f"trade-off, {t['model']} (release {t['release_version']}): per setting, refusal on the "
                      "benchmark mixtures (over-refusal: a mitigation should lower it), on the harmful controls "
                      "(it should not fall) and the scene probe's accuracy (it should not fall); rate, count/n "
                      "[95% CI, cluster bootstrap over script families]",
                  "setting".ljust(first) + " | ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
        lines += [s["setting"].ljust(first) + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))
                  for s, r in zip(t["settings"], rows, strict=True)]
        base = t["settings"][0]
        for s in t["settings"][1:]:
            fell = [name for name in ("mixture", "controls") if _falls(base.get(name), s.get(name))]
            if fell == ["mixture", "controls"]:
                lines.append(f"note: {s['setting']} lowers refusal on the controls with the over-refusal (against "
                             f"{base['setting']}): it refuses less of everything, not less of the benign")
    return "\n".join(lines)


def _falls(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    return bool(before and after and before["n"] and after["n"] and after["rate"] < before["rate"])


def plot_tradeoff(tables: list[dict[str, Any]], path: Path) -> None:
    """One panel per model: the three sides against the setting, each point with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(tables), figsize=(max(7.0, 1.4 * max(len(t["settings"]) for t in tables))
                                                       * len(tables), 4.8), squeeze=False)
    for ax, t in zip(axes[0], tables, strict=True):
        x = np.arange(len(t["settings"]))
        for k, (name, label, colour) in enumerate(SIDES):
            bars = [_bar(s[name]) for s in t["settings"]]
            values = [v for v, _ in bars]
            low = [v - b[0] if b else 0 for v, b in bars]
            high = [b[1] - v if b else 0 for v, b in bars]
            ax.errorbar(x + (k - 1) * 0.08, values, yerr=[low, high], fmt="o:", capsize=3, color=colour, label=label)
        ax.set_xticks(x, [s["setting"] for s in t["settings"]], rotation=20, ha="right")
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("rate (overall)")
        ax.set_title(f"{t['model']} (release {t['release_version']}): what a mitigation costs\n(95% CI, cluster "
                     "bootstrap over script families)", fontsize="medium")
    save_figure(fig, axes[0][-1], path)
