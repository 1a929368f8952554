"""Third-party text (Freesound uploader names, model names, notes) cannot inject HTML, links or table rows
into ATTRIBUTION.md or the dataset card; it stays readable, escaped."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from release.card import PAPER
from release.export import main as export_main
from release.markdown import md
from tests.test_release import edit_chain, make_workspace

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) a|b\nc `code` **bold**"
ESCAPED = r"&lt;script&gt;alert(1)&lt;/script&gt; \[x\](javascript:alert(1)) a\|b c \`code\` \*\*bold\*\*"


def test_attribution_and_card_escape_markdown_and_html(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=3)

    def hostile(s):
        s.mix.sounds[0].attribution = HOSTILE
        s.voice_id = "<img src=x onerror=alert(1)>"
        s.provenance["generate"]["model"] = "[m](javascript:alert(2))"

    def hostile_control(c):
        if c.mix:
            c.mix.sounds[0].attribution = HOSTILE
    edit_chain(ws, hostile)  # as the stages would have recorded it
    edit_chain(ws, hostile_control, stages=(), controls=True)
    report_path = ws.root / "reports" / "agreement.json"
    report = json.loads(report_path.read_text())
    hostile_note = "<b onmouseover=alert(3)>few</b> | [y](javascript:z)"
    report["per_category"]["cooking_household"]["note"] = hostile_note
    report["arms"]["mixture"]["per_category"]["cooking_household"]["note"] = hostile_note  # the same, per arm
    report["arms"]["scene"]["overall"].update(alpha=None, note="<img src=y>")
    report_path.write_text(json.dumps(report))
    out = tmp_path / "release"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out)])

    attribution = (out / "ATTRIBUTION.md").read_text()
    card = _without_paper((out / "README.md").read_text())
    for name, text in (("ATTRIBUTION.md", attribution), ("README.md", card)):
        assert not re.search(r"<(script|img|b)\b", text, re.I), f"raw HTML in {name}"
        assert not re.search(r"(?<!\\)\]\((?!plots/|ATTRIBUTION\.md)", text), f"a link from the data in {name}"
    # readable: the uploader's text is all there, escaped, on its own table row
    rows = [line for line in attribution.splitlines() if line.startswith("| clip-")]
    assert len(rows) == 4 and all(f"| {ESCAPED} |" in row and row.count(" | ") == 6 for row in rows)
    assert [row.rsplit(" | ", 2)[1:] for row in rows if row.startswith("| clip-kitchen")] == [["0", "1 |"]]
    assert "| &lt;img src=x onerror=alert(1)&gt; | piper | MIT | 3 |" in attribution
    assert r"models: \[m\](javascript:alert(2))" in card
    assert r"n/a (&lt;b onmouseover=alert(3)&gt;few&lt;/b&gt; \| \[y\](javascript:z))" in card
    assert "n/a (&lt;img src=y&gt;)" in card
    # the build's twin gate (wer.gate_twins, on in this workspace's config) is on the card's ASR filter line
    assert "and so were clips whose irrelevant or danger twin failed that check while the mixture passed" in card


# --- what CommonMark/GFM would still render from the data ---------------------------------------

INVISIBLE = "\x07\x1b[31m\u202eevil\u202c\u200b\u2066"
MARKUP = "_emphasis_ ~~strike~~ ~one~ https://evil.example/phish www.evil.example &#x202E; snake_case"


def _without_paper(card: str) -> str:
    """The card less the one link the code writes itself (the benchmark's paper): any other is from data."""
    assert card.count(PAPER) == 2  # the paper line and the citation
    return card.replace(f"]({PAPER})", "").replace(PAPER, "")


def _render(markdown: str) -> str:
    """CommonMark with GFM tables and strikethrough (markdown-it-py): what a reader sees as HTML."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


def test_attribution_strips_invisible_characters_and_escapes_emphasis_strike_and_urls(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)

    def hostile(s):
        s.mix.sounds[0].attribution = f"Rec{INVISIBLE}order {MARKUP}"
        s.mix.sounds[0].source_url = "https://evil.example/\u202egpj.exe"
        s.voice_id = "voice_one_"
    edit_chain(ws, hostile)
    out = tmp_path / "release"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out)])
    attribution = (out / "ATTRIBUTION.md").read_text()
    card = _without_paper((out / "README.md").read_text())
    for name, text in (("ATTRIBUTION.md", attribution), ("README.md", card)):
        invisible = [hex(ord(ch)) for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")]
        assert not invisible, f"control or bidi characters in {name}: {invisible}"
        # GFM's extended autolinks: "scheme://" after a letter or digit, "www." at a word start
        assert not re.search(r"[A-Za-z0-9]://|(?<![\w\\])www\.", text), f"a bare URL in {name}"
    html = _render(attribution)
    cells = re.findall(r"<td>(.*?)</td>", html, re.S)
    assert not [c for c in cells if "<" in c], "markup rendered from the data"  # no <em>, <s>, <a> ...
    assert "\u202e" not in html  # nor through the numeric character reference
    # readable: each construct is there as text, in its own cell of one table row per clip
    assert "Rec[31mevilorder _emphasis_ ~~strike~~ ~one~ https://evil.example/phish www.evil.example " \
           "&amp;#x202E; snake_case" in cells
    assert "https://evil.example/gpj.exe" in cells
    assert html.count("<tr>") == 1 + 2 + 1 + 1  # clips: header + clip-0, clip-1; voices: header + one
    assert r"| voice_one\_ | piper | MIT | 2 |" in attribution and "<td>voice_one_</td>" in html


@pytest.mark.parametrize("value, shown", [
    ("a\x07b\x1b[31mc\x00d\x7f", "ab[31mcd"),  # control characters: stripped
    ("song\u202e3pm.exe \u2066x\u2069 zero\u200bwidth", "song3pm.exe x zerowidth"),  # bidi, zero width: stripped
    ("&#x202E;x &amp; y", "&amp;#x202E;x &amp;amp; y"),  # character references stay text
    ("_emphasis_ __strong__ snake_case", "_emphasis_ __strong__ snake_case"),
    ("~~strike~~ ~one~", "~~strike~~ ~one~"),
    ("see https://evil.example/x or www.evil.example", "see https://evil.example/x or www.evil.example"),
])
def test_md_leaves_each_construct_inert_text(value, shown):
    """Each such construct on its own, in a table cell as ATTRIBUTION.md has it."""
    escaped = md(value)
    assert not [ch for ch in escaped if unicodedata.category(ch) in ("Cc", "Cf")]
    assert not re.search(r"[A-Za-z0-9]://|(?<![\w\\])www\.", escaped)  # GFM's extended autolinks
    html = _render(f"| a |\n|---|\n| {escaped} |\n")
    assert re.findall(r"<td>(.*?)</td>", html, re.S) == [shown]
