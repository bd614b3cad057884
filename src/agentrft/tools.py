"""Typed tools: `@tool` turns a Python function into a JSON-schema'd tool.

The schema comes from the type hints (through pydantic) and the docstring (summary line plus
a Google-style ``Args:`` section). Arguments are validated before the function runs; any bad
call becomes an error message for the model, never an exception out of the agent loop.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agentrft.tool_threads import ToolThreads, shared_tool_threads


class ToolError(Exception):
    """Raise inside a tool to send `message` back to the model as the tool's reply.

    Use it for expected, recoverable mistakes (a receipt id that does not exist); the loop
    records the failure kind and the episode goes on.
    """

    def __init__(self, message: str, kind: str = "tool_error") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-argument texts (Google style)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if in_args:
            if line.strip() and not line.startswith((" ", "\t")):
                in_args = False  # another section (Returns:, Raises:) or plain text
            else:
                m = _ARG_LINE.match(line)
                if m and (current is None or len(line) - len(line.lstrip()) <= 4):
                    current = m.group(1).lstrip("*")
                    args[current] = m.group(3).strip()
                elif current and line.strip():
                    args[current] = (args[current] + " " + line.strip()).strip()
                continue
        if not in_args and not re.match(r"^\s*(Returns|Raises|Yields|Examples?):\s*$", line):
            description.append(line)
        else:
            break
    return "\n".join(description).strip(), args


@dataclass
class ToolResult:
    """What a tool call produced: the reply text, and a failure kind when it went wrong."""

    content: str
    failure: str | None = None


class Tool:
    """A tool the model may call. Create one with `@tool`.

    Used as a method decorator on an `Environment`, it binds to the instance like a method.
    """

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, description: str | None = None
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        doc_description, arg_docs = parse_docstring(fn.__doc__)
        self.description = description or doc_description or self.name
        self.is_method = _first_param_is_self(fn)
        #: `async def` tools run on the event loop; sync ones on a worker thread.
        self.is_async = inspect.iscoroutinefunction(fn)
        self.params_model = _params_model(fn, arg_docs, skip_first=self.is_method, name=self.name)
        self._bound_to: Any = None
        # The schema as JSON, built once: pydantic's schema generation costs ~100 us per
        # call and every episode asks. A list so bound copies share the cache.
        self._schema_json: list[str] = []

    def __get__(self, instance: Any, owner: type | None = None) -> Tool:
        if instance is None:
            return self
        bound = type(self).__new__(type(self))
        bound.__dict__.update(self.__dict__)
        bound._bound_to = instance
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._bound_to is not None:
            return self.fn(self._bound_to, *args, **kwargs)
        return self.fn(*args, **kwargs)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema (a fresh dict each call; callers may mutate it)."""
        if not self._schema_json:
            self._schema_json.append(json.dumps(self._build_schema()))
        return json.loads(self._schema_json[0])

    def _build_schema(self) -> dict[str, Any]:
        params = self.params_model.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        params.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, arguments: str | dict[str, Any]) -> BaseModel:
        """Parse and validate raw arguments; raises `ToolError` with a model-readable message."""
        data = _json_object(self.name, arguments, self._example())
        try:
            return self.params_model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolError(
                f"Error: invalid arguments for {self.name}: {problems}. Expected "
                f"{self._example()}.",
                kind="invalid_arguments",
            ) from None

    async def invoke(
        self, arguments: str | dict[str, Any], *, threads: ToolThreads | None = None
    ) -> ToolResult:
        """Validate, run and stringify. Never raises (but a cancellation propagates).

        An `async def` tool runs on the event loop. A sync tool runs on a thread of
        `threads` (default: the process-wide pool), so a blocking call (requests, a
        database driver, boto3) holds neither the loop nor the other episodes on it.
        """
        try:
            kwargs = self._keyword_arguments(arguments)
            if self.is_async:
                out = self(**kwargs)
            else:
                pool = threads if threads is not None else shared_tool_threads()
                out = await pool.run(self, **kwargs)
            if inspect.isawaitable(out):
                out = await out
        except ToolError as exc:
            return ToolResult(exc.message, failure=exc.kind)
        except Exception as exc:  # a tool bug must not end the job; the model sees a short error
            return ToolResult(
                f"Error: {self.name} failed: {type(exc).__name__}: {exc}", failure="tool_exception"
            )
        return ToolResult(_stringify(out))

    def _keyword_arguments(self, arguments: str | dict[str, Any]) -> dict[str, Any]:
        """The validated arguments as keyword arguments for `fn`; raises `ToolError`."""
        parsed = self.validate(arguments)
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    def _example(self) -> str:
        fields = self.params_model.model_fields
        example = {name: f"<{_type_name(f.annotation)}>" for name, f in fields.items()}
        return json.dumps(example)


#: JSON schema type name -> the Python types a JSON value of that type decodes to.
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class SchemaTool(Tool):
    """A tool whose JSON schema is given, not derived from type hints: an outside API's
    function declared in JSON (a benchmark's function docs, an OpenAPI operation).

    `fn` is called with the arguments as keywords (a plain callable, or a method taking
    `self` first when the tool is a class attribute of an `Environment`). The arguments are
    checked against the top level of `parameters` before `fn` runs: a JSON object, every
    `required` name present, no name outside `properties` (unless `additionalProperties` is
    true) and, when `check_types` is set, each value of its property's JSON type. Nested
    values are `fn`'s to check (raise `ToolError`).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        parameters: dict[str, Any],
        description: str = "",
        check_types: bool = True,
    ) -> None:
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise ValueError(
                f"tool {name!r}: parameters must be a JSON schema of type 'object', got "
                f"{parameters!r:.120}"
            )
        properties = parameters.get("properties", {})
        required = parameters.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            raise ValueError(
                f"tool {name!r}: parameters.properties must be an object and "
                "parameters.required a list"
            )
        unknown = [r for r in required if r not in properties]
        if unknown:
            raise ValueError(f"tool {name!r}: required names {unknown} are not in properties")
        self.fn = fn
        self.name = name
        self.description = description or name
        self.is_method = _first_param_is_self(fn)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.parameters = parameters
        self.check_types = check_types
        self._bound_to = None
        self._schema_json = []

    def _build_schema(self) -> dict[str, Any]:
        params = {"type": "object", "properties": {}, **self.parameters}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, arguments: str | dict[str, Any]) -> Any:
        """The arguments as a dict, checked against the schema's top level; raises
        `ToolError` with a model-readable message."""
        data = _json_object(self.name, arguments, self._example())
        properties: dict[str, Any] = self.parameters.get("properties", {})
        problems = [
            f"{r}: Field required" for r in self.parameters.get("required", []) if r not in data
        ]
        if self.parameters.get("additionalProperties") is not True:
            problems += [
                f"{k}: Extra inputs are not permitted" for k in data if k not in properties
            ]
        if self.check_types:
            for key, value in data.items():
                want = (properties.get(key) or {}).get("type")
                if key in properties and not _json_type_matches(value, want):
                    problems.append(f"{key}: expected {want}, got {type(value).__name__}")
        if problems:
            raise ToolError(
                f"Error: invalid arguments for {self.name}: {'; '.join(problems)}. Expected "
                f"{self._example()}.",
                kind="invalid_arguments",
            )
        return data

    def _keyword_arguments(self, arguments: str | dict[str, Any]) -> dict[str, Any]:
        return dict(self.validate(arguments))

    def _example(self) -> str:
        properties = self.parameters.get("properties", {})
        return json.dumps({k: f"<{(v or {}).get('type', 'any')}>" for k, v in properties.items()})


def _json_object(name: str, arguments: str | dict[str, Any], example: str) -> dict[str, Any]:
    """Raw arguments as a dict; a `ToolError` (malformed_tool_json) when they are not one."""
    data: Any = arguments
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments.strip() or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(
                f"Error: the arguments for {name} are not valid JSON ({exc.msg} at position "
                f"{exc.pos}). Send a JSON object such as {example}.",
                kind="malformed_tool_json",
            ) from None
        except RecursionError:
            raise ToolError(
                f"Error: the arguments for {name} are nested too deeply. Send a JSON object "
                f"such as {example}.",
                kind="malformed_tool_json",
            ) from None
    if not isinstance(data, dict):
        raise ToolError(
            f"Error: the arguments for {name} must be a JSON object such as {example}.",
            kind="malformed_tool_json",
        )
    return data


def _json_type_matches(value: Any, want: Any) -> bool:
    """Whether `value` is of JSON schema type `want` (a name or a list of names; an
    unknown or absent type accepts anything). A bool is not an integer or a number."""
    names = want if isinstance(want, list) else [want]
    if not all(isinstance(n, str) and n in _JSON_TYPES for n in names):
        return True
    for n in names:
        if isinstance(value, bool) and n in ("integer", "number"):
            continue
        if isinstance(value, _JSON_TYPES[n]):
            return True
    return False


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """Decorator: make a function (or an `Environment` method) a tool.

    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two numbers.
    ...
    ...     Args:
    ...         a: first addend
    ...         b: second addend
    ...     '''
    ...     return a + b
    """
    if fn is None:
        return lambda f: Tool(f, name=name, description=description)
    return Tool(fn, name=name, description=description)


def _first_param_is_self(fn: Callable[..., Any]) -> bool:
    params = list(inspect.signature(fn).parameters)
    return bool(params) and params[0] in ("self", "cls")


def _params_model(
    fn: Callable[..., Any], arg_docs: dict[str, str], *, skip_first: bool, name: str
) -> type[BaseModel]:
    sig = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolvable forward refs: fall back to raw annotations
        hints = {}
    fields: dict[str, Any] = {}
    for i, (pname, param) in enumerate(sig.parameters.items()):
        if skip_first and i == 0:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(pname, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", str(annotation)).replace("typing.", "")


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)
