"""Read YAML the one way the workbench reads it: safe (no Python objects), with libyaml where PyYAML has it,
and strict about keys. A mapping that gives a key twice is an error naming both lines, not the silent
last-one-wins of YAML loaders: a second `speech:` under a category once dropped 163 of its 164 skeletons
and generate went on."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

# libyaml's safe loader (same data, ~7x faster on the 250 KB shipped taxonomy, which every stage, push and
# export reads); PyYAML's pure-Python one where PyYAML was built without libyaml
FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(FAST_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping with a key given twice (a ConstructorError, so a YAMLError)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:  # `<<: *anchor` merges; the merged keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base constructor says so
                continue
            if first != key_node.start_mark.line + 1:
                raise ConstructorError(f"while reading the mapping from line {node.start_mark.line + 1}", node.start_mark,
                                       f"the key {key!r} is given twice (lines {first} and "
                                       f"{key_node.start_mark.line + 1}); keep one", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str | bytes) -> Any:
    """The document in `text`; yaml.YAMLError when it is not YAML or gives a key twice."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a safe loader)
