"""Third-party text (Freesound uploader names, model names, notes) cannot inject HTML, links or table rows
into ATTRIBUTION.md or the dataset card (issue 14, item 4); it stays readable, escaped."""

from __future__ import annotations

import json
import re

from release.export import main as export_main
from tests.test_release import make_workspace

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) a|b\nc `code` **bold**"
ESCAPED = r"&lt;script&gt;alert(1)&lt;/script&gt; \[x\](javascript:alert(1)) a\|b c \`code\` \*\*bold\*\*"


def test_attribution_and_card_escape_markdown_and_html(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=3)
    samples = list(ws.read_samples("validated"))
    for s in samples:
        s.mix.sounds[0].attribution = HOSTILE
        s.voice_id = "<img src=x onerror=alert(1)>"
        s.provenance["generate"]["model"] = "[m](javascript:alert(2))"
    ws.write_manifest("validated", samples)
    controls = list(ws.read_samples("annotated_controls"))
    for c in controls:
        if c.mix:
            c.mix.sounds[0].attribution = HOSTILE
    ws.write_manifest("annotated_controls", controls)
    report_path = ws.root / "reports" / "agreement.json"
    report = json.loads(report_path.read_text())
    hostile_note = "<b onmouseover=alert(3)>few</b> | [y](javascript:z)"
    report["per_category"]["cooking_household"]["note"] = hostile_note
    report["arms"]["mixture"]["per_category"]["cooking_household"]["note"] = hostile_note  # the same, per arm
    report["arms"]["scene"]["overall"].update(alpha=None, note="<img src=y>")
    report_path.write_text(json.dumps(report))
    out = tmp_path / "release"
    export_main(["--workspace", str(ws.root), "--out", str(out)])

    attribution = (out / "ATTRIBUTION.md").read_text()
    card = (out / "README.md").read_text()
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
