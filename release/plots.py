"""The release's PNG plots (category mix, SNR and WER histograms, alpha per category and arm).

Apart from release.card because it is the only part of a release that needs matplotlib; the card links
the files it returns. Built from the same rows as the card; no timestamps in the PNGs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any


def write_plots(folder: Path, rows: list[dict[str, Any]], agreement: dict[str, Any],
                categories: list[str]) -> dict[str, str]:
    """PNG plots (matplotlib Agg); returns {name: path relative to the release root}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    folder.mkdir(parents=True, exist_ok=True)
    plots: dict[str, str] = {}

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(folder / f"{name}.png", dpi=100, metadata={"Software": None})
        plt.close(fig)
        plots[name] = f"plots/{name}.png"

    counts = Counter(categories[r["category"]] for r in rows)
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(categories) + 1.5))
    ax.barh(categories, [counts[c] for c in categories], color="#4c72b0")
    ax.invert_yaxis()
    ax.set_xlabel("samples")
    ax.set_title("Samples per category")
    save(fig, "category_mix")

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.hist([r["snr_db"] for r in rows], bins=20, color="#55a868")
    ax.set_xlabel("SNR of speech over background (dB)")
    ax.set_ylabel("samples")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("SNR distribution")
    save(fig, "snr_db")

    fig, ax = plt.subplots(figsize=(7, 3.5))
    wers = [r["wer_mixture"] for r in rows if r["wer_mixture"] is not None]
    ax.hist(wers, bins=20, range=(0, max([0.2, *wers])), color="#c44e52")
    ax.set_xlabel("WER of the ASR transcript of the mixture")
    ax.set_ylabel("samples")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("WER distribution" + ("" if wers else " (no WER recorded)"))
    save(fig, "wer_mixture")

    # one bar per arm and category (three-arm protocol), or the mixture's alone
    arms = agreement.get("arms") or {"mixture": {"per_category": agreement.get("per_category") or {}}}
    arm_names = [a for a in ("speech", "scene", "mixture") if a in arms]
    names = sorted({c for a in arm_names for c in (arms[a].get("per_category") or {})})
    colours = {"speech": "#dd8452", "scene": "#55a868", "mixture": "#8172b2"}
    height = 0.8 / len(arm_names)
    fig, ax = plt.subplots(figsize=(7, 0.4 * max(1, len(names)) * len(arm_names) + 1.5))
    lows, shown = [0.0], set()
    for j, arm in enumerate(arm_names):
        per = arms[arm].get("per_category") or {}
        for i, name in enumerate(names):
            y = i - 0.4 + height * (j + 0.5)
            entry = per.get(name) or {}
            alpha, ci = entry.get("alpha"), entry.get("ci95_clustered") or entry.get("ci95")
            if alpha is None:
                ax.text(0, y, f"  n/a ({arm})", va="center", fontsize="small")
                continue
            lows.append(alpha - 0.05)
            err = [[alpha - ci[0]], [ci[1] - alpha]] if ci else None
            ax.barh(y, alpha, height, xerr=err, color=colours[arm], capsize=3,
                    label=None if arm in shown else f"{arm} arm")
            shown.add(arm)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.axvline(0.667, ls="--", color="grey", lw=1)
    ax.set_xlim(min(lows), 1)
    ax.set_xlabel("Krippendorff's alpha (95% CI, script families); dashed: 0.667")
    ax.set_title("Inter-annotator agreement per category" + (" and arm" if len(arm_names) > 1 else ""))
    if len(shown) > 1:
        ax.legend(fontsize="small", loc="lower right")
    save(fig, "alpha_per_category")
    return plots
