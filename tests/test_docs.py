"""The README and the documentation site: the site builds with `mkdocs build --strict`, its CLI reference is
what `--help` prints, the README stays a front door (at most 250 lines), every `python -m X` the README and
the docs name is an entry point, every entry point is in the README's command table, and every relative
link of the README resolves."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
OURS = {"construction", "annotation", "validation", "release", "evaluation", "tests"}
# modules of other projects the docs may name (python -m mkdocs serve, python -m pip ...)
EXTERNAL = {"mkdocs", "pip", "pytest", "lmms_eval", "venv"}
MODULE = re.compile(r"python -m ([A-Za-z_][\w.]*\w)(?![\w.<])")


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strict_and_has_every_page(site):
    for page in ("index", "concepts/index", "construction/index", "annotation/index", "validation/index",
                 "release/index", "evaluation/index", "performance/index", "security/index",
                 "troubleshooting/index", "reference/cli/index"):
        assert (site / f"{page}.html").is_file(), page
    for image in ("arm-speech.png", "arm-scene.png", "arm-mixture.png", "procedural-sounds.png"):
        assert (site / image).is_file(), image
    assert not (site / "hooks").exists()  # the hook is code, not a page


def test_the_cli_reference_is_what_help_prints(site):
    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    blocks = {html.unescape(b).rstrip() for b in re.findall(r'<pre><code class="language-text">(.*?)</code></pre>',
                                                            page, re.S)}
    names = [name for name, _ in _hook()._entry_points(ROOT)]
    assert len(names) >= 20, names
    for name in names:  # every entry point has its section
        assert f">python -m {name}<" in page, name
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    for command in (["annotation.push"], ["annotation.server", "stop"], ["evaluation.adapters"]):
        shown = subprocess.run([sys.executable, "-m", *command, "--help"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.rstrip() in blocks, command


def test_the_cli_reference_names_no_machine_s_core_count(site):
    """--help says how many cores `--jobs` defaults to here; the page is read on other machines."""
    page = html.unescape((site / "reference" / "cli" / "index.html").read_text(encoding="utf-8"))
    assert "the CPU cores available to this process" in page
    assert not re.search(r"\d+\s+here\b", page), re.search(r".{60}\d+\s+here\b", page, re.S).group(0)


def test_a_figure_a_page_quotes_is_what_the_code_prints(site, tmp_path):
    """concepts quotes the line construction.generate prints about distinctive scenes: the site shows it as the
    code of this checkout prints it (docs/hooks/figures.py), never a number from an older build."""
    done = subprocess.run([sys.executable, "-m", "construction.generate", "--workspace", str(tmp_path / "ws"),
                           "--per-category", "1", "--quiet"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    printed = re.search(r"distinctive scenes: \d+/\d+ \(\d+%\)", done.stdout)
    assert printed, done.stdout + done.stderr
    page = html.unescape((site / "concepts" / "index.html").read_text(encoding="utf-8"))
    assert f"<code>{printed.group(0)}</code>" in page
    assert "figure:" not in page and "N/M" not in page


def test_code_blocks_wrap_in_a_narrow_column_and_the_built_site_is_not_committed(site):
    page = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    assert "stylesheets/extra.css" in page
    css = (site / "stylesheets" / "extra.css").read_text()
    assert re.search(r"pre > code\s*\{[^}]*white-space:\s*pre-wrap", css)
    # `python -m mkdocs build` (no -d) writes ./site: git ignores it
    ignored = subprocess.run(["git", "check-ignore", "-q", "site/index.html"], cwd=ROOT)
    assert ignored.returncode == 0, "site/ is not git-ignored"


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    text = "\n".join(lines)
    for must in ("make demo", "make test", "source .venv/bin/activate", "workspace/release",
                 "docs/journeys/maintainer.md", "docs/journeys/annotation-lead.md", "docs/journeys/researcher.md",
                 "mkdocs serve", "--help"):
        assert must in text, must


def _is_entry_point(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    if (path / "__main__.py").is_file():
        return True
    file = path.with_suffix(".py")
    return file.is_file() and 'if __name__ == "__main__":' in file.read_text(encoding="utf-8")


def test_every_python_m_named_in_the_docs_is_an_entry_point():
    named: dict[str, set[str]] = {}
    for page in _pages():
        for module in MODULE.findall(page.read_text(encoding="utf-8")):
            named.setdefault(module, set()).add(page.relative_to(ROOT).as_posix())
    assert "release.export" in named and "construction.pipeline" in named
    wrong = {m: sorted(pages) for m, pages in named.items()
             if not (_is_entry_point(m) if m.split(".")[0] in OURS else m in EXTERNAL)}
    assert not wrong, f"not an entry point: {wrong}"


def test_every_entry_point_is_in_the_readme_command_table():
    table = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `python -m ")]
    listed = {MODULE.search(line).group(1) for line in table}
    missing = [name for name, _ in _hook()._entry_points(ROOT) if name not in listed]
    assert not missing, missing


def test_every_relative_link_in_the_readme_resolves():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"^(https?:|mailto:|#)", link)]
    assert relative, "the README links to the docs"
    broken = [link for link in relative if not (README.parent / link.split("#")[0]).exists()]
    assert not broken, broken
