"""The one reader of the YAML files people write or review: expectations, references, a
site's Spack settings.

PyYAML keeps the last of two equal keys in a mapping without a word: an expectations file
with a second ``expectations:`` list, or a reviewed entry whose ``unit`` was written twice,
would be read as something its author did not see. Here a duplicate key is an error naming
the file, the key and both lines.
"""

from __future__ import annotations

from pathlib import Path

import yaml


class YamlError(ValueError):
    """The file is not YAML this suite reads: ``<file>: <what> -- <fix>``."""


class _Strict(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping."""


def _mapping(loader: _Strict, node: yaml.MappingNode) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor says so below
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {key!r} given twice (lines {first} and {key_node.start_mark.line + 1})",
                None,
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=True)


_Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def loads(text: str, where: str = "<text>"):
    """``text`` as YAML; YamlError (one line) when it is not, or a mapping repeats a key."""
    try:
        return yaml.load(text, Loader=_Strict)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or type(e).__name__
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise YamlError(
            f"{where} cannot be read as YAML: {problem}{at} -- correct the file"
        ) from None


def load(path: Path | str):
    """The YAML file ``path``; YamlError naming it when it is unreadable, malformed, or
    repeats a key."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or type(e).__name__
        raise YamlError(f"{path}: cannot read it ({why}) -- give a readable YAML file") from None
    return loads(text, str(path))
