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
        bound = Tool.__new__(Tool)
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
        if isinstance(arguments, str):
            text = arguments.strip() or "{}"
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ToolError(
                    f"Error: the arguments for {self.name} are not valid JSON ({exc.msg} at "
                    f"position {exc.pos}). Send a JSON object such as {self._example()}.",
                    kind="malformed_tool_json",
                ) from None
            except RecursionError:  # a model can nest brackets deeper than the parser goes
                raise ToolError(
                    f"Error: the arguments for {self.name} are nested too deeply. Send a "
                    f"JSON object such as {self._example()}.",
                    kind="malformed_tool_json",
                ) from None
        else:
            data = arguments
        if not isinstance(data, dict):
            raise ToolError(
                f"Error: the arguments for {self.name} must be a JSON object such as "
                f"{self._example()}.",
                kind="malformed_tool_json",
            )
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
            parsed = self.validate(arguments)
            kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields}
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

    def _example(self) -> str:
        fields = self.params_model.model_fields
        example = {name: f"<{_type_name(f.annotation)}>" for name, f in fields.items()}
        return json.dumps(example)


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
