"""Workspace text as inert Markdown, and the number formats the dataset card and ATTRIBUTION.md share.

Text from the workspace (third-party attributions, model and voice names, notes) goes through `md`: no
HTML, links or table breaks can come in with it. Its own module so that release.card, release.card_protocol
and release.attribution escape and format the same way without importing one another.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*~\[\]|])")
# `_` opens or closes emphasis unless it sits between two letters or digits (CommonMark's flanking rules)
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# GFM's extended autolinks start at "scheme://" and "www."; escaping the ':' or '.' leaves plain text
_AUTOLINK = re.compile(r"(?<=[A-Za-z0-9])(://)|(?<![^\W_])(www)\.", re.I)
_INVISIBLE = ("Cc", "Cf", "Cs")  # control, format (bidi overrides, zero-width) and surrogate characters


def md(value: Any) -> str:
    """Untrusted text as inert Markdown: no HTML tags or entities, links, autolinked URLs, code spans,
    emphasis, strikethrough, table breaks or invisible characters (controls, bidi overrides), one line.

    '<script>' -> '&lt;script&gt;', '[x](javascript:...)' -> '\\[x\\](javascript:...)', 'a|b' -> 'a\\|b',
    '_em_' -> '\\_em\\_' (video_games stays), 'https://x.org' -> 'https\\://x.org', U+202E -> ''."""
    text = "".join(" " if ch.isspace() else ch for ch in str(value)
                   if ch.isspace() or unicodedata.category(ch) not in _INVISIBLE)
    text = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _UNDERSCORE.sub(r"\\_", text)
    return _AUTOLINK.sub(lambda m: "\\://" if m.group(1) else m.group(2) + "\\.", text)


def cell(value: Any) -> str:
    from release.scrub import public

    return md(public(value) if value is not None else "")


def alpha(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("alpha") is None:
        note = (entry or {}).get("note") or "not computable"
        return f"n/a ({md(note)})"
    ci = entry.get("ci95_clustered") or entry.get("ci95")
    return f"{entry['alpha']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def stats(values: list[float], unit: str = "") -> str:
    if not values:
        return "none recorded"
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return (f"min {values[0]:.3f}{unit}, median {statistics.median(values):.3f}{unit}, "
            f"mean {statistics.fmean(values):.3f}{unit}, p90 {p90:.3f}{unit}, max {values[-1]:.3f}{unit}")


def counter_text(counter: Counter) -> str:
    """'a (3), b (1)'; a single value is shown without its count."""
    if len(counter) == 1:
        return md(next(iter(counter)))
    return ", ".join(f"{md(k)} ({v})" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))) \
        or "unknown"


def demo_share(sources: dict[str, int]) -> str:
    """Who posted the labels of a release with demo labels: all scripted, or how many of each."""
    total = sum(sources.values())
    if sources["demo"] == total:
        return f"all {total} labels from scripted demo annotators, none from people"
    return (f"{sources['demo']} of the {total} labels from scripted demo annotators, {sources['human']} from people"
            + (f", {sources['adjudication']} adjudicators' decisions" if sources["adjudication"] else ""))
