"""Reading configuration files and `--set` overrides, with bounds.

Files are read with bounds (size, nesting, alias expansion, integer length) and duplicate
keys are errors, so a broken or hostile file fails fast with one line instead of a long
parse, a traceback or an echo of the whole input.
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the fix."""


#: A config is a few KB; anything this large is the wrong file (or an attack).
MAX_CONFIG_BYTES = 1 << 20
#: Deepest nesting of lists/mappings in a config or `--set` value (configs use about 3).
MAX_NESTING = 32
#: Values (scalars, lists, mappings) in one document once aliases are expanded: bounds a
#: YAML alias bomb ("billion laughs": 9 levels of 9 aliases expand to 9**9 strings).
MAX_NODES = 10_000
#: Longest integer literal; Python refuses to convert past 4,300 digits with a ValueError.
MAX_INT_CHARS = 100


class ConfigLimitError(yaml.MarkedYAMLError):
    """A YAML document breaks one of the loader's bounds or repeats a key."""


class BoundedYAMLLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` with bounds: nesting depth, expanded size, integer length, and
    duplicate keys as errors (PyYAML keeps the last value silently)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
        # The composer recurses per level: bound it before Python's recursion limit does.
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                mark = self.peek_event().start_mark
                raise ConfigLimitError(None, None, f"nests deeper than {MAX_NESTING} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_expanded_size(node, aliased=self._aliases > 0)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                    key_node, yaml.ScalarNode
                ):
                    continue  # `<<` merges may be overridden; complex keys are rare
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    first = seen[key].start_mark.line + 1
                    raise ConfigLimitError(
                        None,
                        None,
                        f"duplicate key {key_node.value[:60]!r} (first set on line {first})",
                        key_node.start_mark,
                    )
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def construct_bounded_int(self, node: Any) -> int:
        if len(node.value) > MAX_INT_CHARS:
            raise ConfigLimitError(
                None,
                None,
                f"an integer of {len(node.value)} characters (at most {MAX_INT_CHARS})",
                node.start_mark,
            )
        value: int = self.construct_yaml_int(node)
        return value


BoundedYAMLLoader.add_constructor("tag:yaml.org,2002:int", BoundedYAMLLoader.construct_bounded_int)


def _check_expanded_size(root: Any, aliased: bool) -> None:
    """Raise when the node graph expands past MAX_NODES values or refers to itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _yaml_children(node)
        if finished:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                what = (
                    f"expands to more than {MAX_NODES:,} values through its aliases (an "
                    "alias bomb?)"
                    if aliased
                    else f"holds more than {MAX_NODES:,} values"
                )
                raise ConfigLimitError(None, None, what, node.start_mark)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConfigLimitError(None, None, "an alias refers to itself", node.start_mark)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _yaml_children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_yaml(text: str) -> Any:
    """Parse one YAML (or JSON) document with `BoundedYAMLLoader`; raises `yaml.YAMLError`."""
    loader = BoundedYAMLLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: what and where, without PyYAML's snippet of the input."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            what = f"{exc.context}, {what}"
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{' '.join(what.split())}{where}"
    return " ".join(str(exc).split())


def _python_limit(exc: ValueError) -> str:
    if "integer string conversion" in str(exc):
        return "an integer is longer than Python reads (4300 digits)"
    return " ".join(str(exc).split())


def config_data(
    path: str | Path | None, values: Mapping[str, Any], overrides: Sequence[str]
) -> dict[str, Any]:
    """The config's data before validation: the file at `path` (if any), then `values`
    (dotted keys; None skipped), then `overrides` (`a.b=v`)."""
    data: dict[str, Any] = read_config_file(path) if path else {}
    for key, value in values.items():
        if value is not None:
            set_path(data, key.split("."), value)
    for item in overrides:
        keys, value = parse_override(item)
        set_path(data, keys, value)
    return data


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML (.yaml/.yml/.json) or TOML (.toml) file into a dict."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory; pass a .yaml or .toml file")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise ConfigError(f"config file {path}: use a .yaml, .yml or .toml file")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file {path} is {size:,} bytes; a config is a few KB (the limit is "
            f"{MAX_CONFIG_BYTES:,}): is it the right file?"
        )
    try:
        # utf-8-sig: an editor's byte-order mark is not part of the config.
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = load_yaml(text)
            data = {} if data is None else data
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} does not parse: {yaml_error_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests too deeply to parse") from None
    except ValueError as exc:  # tomllib's errors, and integers past Python's digit limit
        raise ConfigError(f"config file {path} does not parse: {_python_limit(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b=value` -> (["a", "b"], value); the value is read as YAML (numbers, lists, ...).

    A value that is not YAML stays a plain string; one that breaks the loader's bounds
    (deep nesting, an alias bomb, a huge integer, a repeated key) is an error.
    """
    if "=" not in item:
        raise ConfigError(
            f"override {short(item)} must look like key=value (e.g. local.model=gpt2)"
        )
    key, raw = item.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ConfigError(f"override {short(item)} has an empty key")
    try:
        value = load_yaml(raw) if raw.strip() else None
    except ConfigLimitError as exc:
        raise ConfigError(f"--set {key.strip()}: the value {yaml_error_line(exc)}") from None
    except yaml.YAMLError:
        value = raw
    return path, value


def set_path(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[path[-1]] = value


#: How much of a wrong value an error shows: enough to recognise it, never the whole input.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
_REPR.maxlevel = 2


def short(value: Any) -> str:
    """`value` cut short for an error message."""
    return _REPR.repr(value)
