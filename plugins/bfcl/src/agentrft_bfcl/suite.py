"""What this plugin takes from bfcl-eval, in one place: the entries and their ground truth,
the tool conversion, the stateful API classes, the decoder and the multi-turn checker.

Everything BFCL-specific goes through here, so the rest of the plugin reads like any task.
Only narrow submodules are imported (no model handlers, no HF hub, no network): the
checker, the backend constants, the API classes and `model_handler.utils` (the FC
tool conversion and decoder, which pulls `bfcl_eval.utils` and tree-sitter, both local).

`bfcl_eval.constants.eval_config` creates result/score/lock folders under
`BFCL_PROJECT_ROOT` when imported (by default next to site-packages, which may be
read-only); unless the variable is set, this module points it at a folder in the temp dir.
This plugin writes no result files there; BFCL's loaders put their file locks there.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import keyword
import os
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import Any

os.environ.setdefault("BFCL_PROJECT_ROOT", os.path.join(tempfile.gettempdir(), "agentrft-bfcl"))

from bfcl_eval.constants.default_prompts import (
    DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
    MAXIMUM_STEP_LIMIT,
)
from bfcl_eval.constants.enums import ModelStyle
from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    STATELESS_CLASSES,
)
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
    multi_turn_checker,
)
from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

#: The categories this plugin plays. long_context loads every API class with BFCL's long
#: scenario (`_load_scenario(..., long_context=True)`, as BFCL decides it from the id);
#: miss_param has one turn per entry that lacks a parameter and whose ground truth is empty;
#: miss_func holds functions back until a given turn, whose user message is BFCL's
#: "I have updated some more functions..." (the turn before asks for them: empty ground truth).
CATEGORIES = (
    "multi_turn_base",
    "multi_turn_long_context",
    "multi_turn_miss_param",
    "multi_turn_miss_func",
)
#: BFCL ends a turn's inference (and fails the entry) after this many steps in one turn.
STEP_LIMIT = MAXIMUM_STEP_LIMIT

__all__ = [
    "CATEGORIES",
    "REFUSED_CALL",
    "STEP_LIMIT",
    "Entry",
    "callable_names",
    "check_turns",
    "decode_step",
    "entries",
    "entry",
    "load_instances",
    "openai_tools",
    "tool_names",
]


@dataclass(frozen=True)
class Entry:
    """One BFCL multi-turn test entry with its ground truth.

    `turns` are the user messages of each turn (what the policy sees, one turn at a time);
    `ground_truth` the possible answer's call strings per turn (never shown); `raw` the
    entry as BFCL's loader returns it (with `function`, its function docs), which the
    checker takes.
    """

    id: str
    category: str
    turns: tuple[tuple[str, ...], ...]
    ground_truth: tuple[tuple[str, ...], ...]
    involved_classes: tuple[str, ...]
    raw: dict[str, Any]
    #: miss_func: turn -> the function docs BFCL adds to the tools at that turn.
    added_functions: dict[int, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    @property
    def long_context(self) -> bool:
        # As execute_multi_turn_func_call's callers decide it.
        return "long_context" in self.category or "composite" in self.category


@cache
def entries(category: str = "multi_turn_base") -> dict[str, Entry]:
    """The category's entries by id, loaded with BFCL's own loaders (function docs
    populated from multi_turn_func_doc as BFCL's inference does)."""
    if category not in CATEGORIES:
        raise ValueError(f"bfcl: category {category!r} is not supported; use one of {CATEGORIES}")
    answers = {a["id"]: a["ground_truth"] for a in load_ground_truth_entry(category)}
    out: dict[str, Entry] = {}
    for raw in load_dataset_entry(category):
        # BFCL's loader moved held-out docs from `function` to `missed_function` (by turn).
        added = {int(k): tuple(v) for k, v in raw.get("missed_function", {}).items()}
        turns = tuple(
            # A turn that adds functions has no question: BFCL's FC inference asks this.
            (DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,)
            if k in added
            else tuple(m["content"] for m in turn if m["role"] == "user")
            for k, turn in enumerate(raw["question"])
        )
        out[raw["id"]] = Entry(
            id=raw["id"],
            category=category,
            turns=turns,
            ground_truth=tuple(tuple(t) for t in answers[raw["id"]]),
            involved_classes=tuple(raw["involved_classes"]),
            raw=raw,
            added_functions=added,
        )
    return out


def entry(entry_id: str) -> Entry:
    """The entry named `entry_id` ("multi_turn_base_12"); KeyError when there is none."""
    category = entry_id.rsplit("_", 1)[0]
    if category not in CATEGORIES:
        raise KeyError(entry_id)
    return entries(category)[entry_id]


def openai_tools(e: Entry, turn: int = 0) -> list[dict[str, Any]]:
    """The function docs offered at `turn` as OpenAI tools, converted as BFCL's OpenAI FC
    handler does (`convert_to_tool` with GORILLA_TO_OPENAPI: dict -> object, float ->
    number); miss_func's held-out docs are appended from their turn on, as BFCL extends
    `test_entry["function"]` and recompiles the tools."""
    docs = list(e.raw["function"])
    for k in sorted(e.added_functions):
        if k <= turn:
            docs.extend(e.added_functions[k])
    return list(convert_to_tool(docs, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS))


@cache
def tool_names(entry_id: str, turn: int = 0) -> frozenset[str]:
    """The names of the tools entry `entry_id` offers at `turn`."""
    return frozenset(t["function"]["name"] for t in openai_tools(entry(entry_id), turn))


def callable_names(entry_id: str) -> frozenset[str]:
    """The names BFCL's executor runs for the entry: every function it documents, offered
    yet or not (a miss_func function called before its turn runs, as in BFCL; every public
    method of the entry's classes is documented, a test checks)."""
    return tool_names(entry_id, len(entry(entry_id).turns))


def load_instances(e: Entry) -> dict[str, Any]:
    """Fresh instances of the entry's API classes with its initial_config loaded, exactly as
    `execute_multi_turn_func_call` makes them (stateless classes get no scenario)."""
    instances: dict[str, Any] = {}
    for class_name in e.involved_classes:
        module = importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])
        instance = getattr(module, class_name)()
        if class_name not in STATELESS_CLASSES:
            config = e.raw["initial_config"].get(class_name, {})
            instance._load_scenario(copy.deepcopy(config), long_context=e.long_context)
        instances[class_name] = instance
    return instances


def public_methods(instances: dict[str, Any]) -> dict[str, Any]:
    """Method name -> bound method, later classes winning a shared name, as BFCL maps them."""
    methods: dict[str, Any] = {}
    for instance in instances.values():
        for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not name.startswith("_"):
                methods[name] = method
    return methods


#: What a refused call becomes in the checker's input: a name nothing defines, so BFCL's
#: executor records "Error during execution: name ... is not defined" and runs nothing.
REFUSED_CALL = "agentrft_refused_call()"


def decode_step(calls: list[tuple[str, str]], allowed: frozenset[str]) -> list[str] | None:
    """One step's tool calls (name, JSON arguments) as BFCL's OpenAI FC decoder writes them
    (`convert_to_function_call`: `name(k=repr(v),...)`); None when the step does not decode
    (BFCL's evaluation then skips the step).

    BFCL's checker `eval`s these strings, and the name and argument keys are the model's
    text: a call to a name outside `allowed` (the entry's tools) or with a key that is not
    a plain identifier becomes `REFUSED_CALL`, which fails in the executor as the original
    would (an undefined name, a syntax error) without running anything, e.g. a call named
    `open` with `{"file": ..., "mode": "w"}`. The checker's verdict is unchanged: such a
    call changes no state and its error matches no ground-truth result.
    """
    out: list[str] = []
    for name, arguments in calls:
        try:
            (decoded,) = convert_to_function_call([{name: arguments}])
            values = json.loads(arguments) if isinstance(arguments, str) else arguments
        except Exception:  # invalid JSON, arguments that are not an object: BFCL skips the step
            return None
        safe = name in allowed and all(
            isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in values
        )
        out.append(decoded if safe else REFUSED_CALL)
    return out


# BFCL keeps the checker's instances in multi_turn_utils' module globals, named by model and
# entry; each check gets a unique model name and removes its instances afterwards.
_globals_lock = threading.Lock()


def check_turns(
    e: Entry, decoded: list[list[list[str]]], turns: int | None = None
) -> dict[str, Any]:
    """BFCL's `multi_turn_checker` on the first `turns` turns (default all) of `decoded`
    (per turn, per step, the call strings). Returns the checker's result dict."""
    n = len(e.ground_truth) if turns is None else turns
    model_name = f"agentrft_{uuid.uuid4().hex}"
    try:
        return dict(
            multi_turn_checker(
                [list(t) for t in decoded[:n]],
                [list(t) for t in e.ground_truth[:n]],
                e.raw,
                e.category,
                model_name,
            )
        )
    finally:
        with _globals_lock:
            module_globals = vars(multi_turn_utils)
            for key in [k for k in list(module_globals) if k.startswith(model_name)]:
                del module_globals[key]
