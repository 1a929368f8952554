"""The report's tables and notes as a terminal shows them: no line wider than WIDTH characters.

A table with more columns than fit is cut into blocks of whole columns, each block repeating the first
column (the category), one under the other; a note is wrapped at word boundaries.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

WIDTH = 120  # a terminal beside an editor; wider tables were cut off or wrapped mid-cell
SEP = " | "


def note(text: str, width: int = WIDTH) -> list[str]:
    """`text` wrapped at word boundaries, continuation lines indented by two spaces."""
    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False) or [""]


def table(first: str, heads: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]],
          width: int = WIDTH) -> list[str]:
    """Header and rows (label, cells), each column as wide as its widest cell, cut into blocks of columns that
    fit `width` (a column wider than the room left gets a block of its own); blocks are separated by a blank
    line."""
    label_width = max(len(first), *(len(label) for label, _ in rows)) + 2
    widths = [max(len(h), *(len(cells[k]) for _, cells in rows)) for k, h in enumerate(heads)]
    blocks: list[list[int]] = []
    used = width  # forces a first block
    for k, w in enumerate(widths):
        if blocks and used + len(SEP) + w <= width:
            blocks[-1].append(k)
            used += len(SEP) + w
        else:
            blocks.append([k])
            used = label_width + w
    lines: list[str] = []
    for n, block in enumerate(blocks):
        if n:
            lines.append("")
        lines.append((first.ljust(label_width) + SEP.join(heads[k].ljust(widths[k]) for k in block)).rstrip())
        for label, cells in rows:
            lines.append((label.ljust(label_width) + SEP.join(cells[k].ljust(widths[k]) for k in block)).rstrip())
    return lines
