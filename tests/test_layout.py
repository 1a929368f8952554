"""The layout a newcomer reads: the packages import each other in the order data flows, and no module
imports itself back through others (walked with `ast`, without importing anything)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("construction", "annotation", "validation", "release", "evaluation")  # the order data flows


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules `name` imports anywhere in its file (late imports inside functions count too:
    they hide a circle, they do not break it)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` names a.b.c; resolve to the longest project module it names
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    graph = {name: imports_of(name, path, known) for name, path in modules.items()}
    # a package's __init__ importing nothing is the rule here, so a submodule's import of its parent
    # package is no edge worth following
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary circle's smallest form, found by depth-first search from each module."""
    found: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str], on_path: set[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                i = path.index(min(path))
                found.add(tuple(path[i:] + path[:i]))
            elif nxt not in on_path and nxt > start:  # each circle once, from its smallest module
                walk(start, nxt, path + [nxt], on_path | {nxt})

    for start in sorted(graph):
        walk(start, start, [start], {start})
    return [list(c) for c in sorted(found)]


def test_the_cycle_finder_finds_a_circle_and_passes_a_line():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_late_and_relative_imports(tmp_path):
    names = {"pkg", "pkg.a", "pkg.b"}
    late = tmp_path / "a.py"
    late.write_text("def f():\n    from pkg import b\n")
    relative = tmp_path / "b.py"
    relative.write_text("from .a import f\n")
    assert imports_of("pkg.a", late, names) == {"pkg", "pkg.b"}
    assert imports_of("pkg.b", relative, names) == {"pkg.a"}


def test_no_module_imports_itself_back():
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c + [c[0]]) for c in found)


def test_each_package_imports_only_those_before_it():
    graph = import_graph()
    wrong = [f"{name} imports {target}" for name, targets in graph.items() for target in sorted(targets)
             if PACKAGES.index(target.split(".")[0]) > PACKAGES.index(name.split(".")[0])]
    assert not wrong, "\n".join(wrong)


def test_the_stages_import_the_core_and_the_rooms_not_each_other_privately():
    """Outside construction, nothing reaches for a private name (a leading underscore) of another package."""
    private = []
    for name, path in project_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                owner = node.module.split(".")[0]
                if owner in PACKAGES and owner != name.split(".")[0]:
                    private += [f"{name}: from {node.module} import {a.name}" for a in node.names
                                if a.name.startswith("_")]
    assert not private, "\n".join(private)


STAGES = {"generate", "synthesize", "mix", "wer", "controls", "pipeline"}  # and the package's __init__


def test_constructions_top_level_is_the_stages_and_the_rooms_import_no_stage():
    """construction/ holds the stages; its rooms (core, text, speech, sounds, mixing) hold what they share.
    A room never imports a stage (a stage is the top of the room it uses)."""
    top = {p.stem for p in (REPO / "construction").glob("*.py")} - {"__init__"}
    assert top == STAGES, f"construction/'s top level should be the stages only; also: {sorted(top - STAGES)}"
    rooms = {p.name for p in (REPO / "construction").iterdir() if (p / "__init__.py").is_file()}
    assert {"core", "text", "speech", "sounds", "mixing"} <= rooms
    graph = import_graph()
    upward = [f"{name} imports {target}" for name, targets in graph.items()
              if name.split(".")[:2][-1] in rooms for target in targets
              if target.startswith("construction.") and target.split(".")[1] in STAGES]
    assert not upward, "\n".join(upward)
