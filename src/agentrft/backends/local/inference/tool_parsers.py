"""Reading tool calls out of a sampled reply, in the format the model's chat template teaches.

Three formats cover the templates the local backend was checked against
(tests/local/test_real_templates.py):

- `hermes`: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (Qwen2.5/3,
  Hermes, SmolLM with the ChatML tool template, the tiny model) — `chat_tokens.parse_tool_calls`.
- `llama3_json`: Llama 3.1/3.2/3.3's custom-tool format, the whole reply one JSON object
  `{"name": ..., "parameters": {...}}`, optionally after `<|python_tag|>`; several calls may
  be joined by `;` (as vLLM's `llama3_json` parser reads them).
- `harmony`: gpt-oss's Harmony messages. A reply is a run of messages
  `<|channel|>analysis<|message|>...<|end|><|start|>assistant to=functions.NAME<|channel|>
  commentary json<|message|>{...}<|call|>`; a message addressed `to=functions.NAME` is a
  call, `analysis` is reasoning, `final` (and recipient-less `commentary`) is content.

`tool_call_format` picks one from the template's text. Like the Hermes parser, a call whose
JSON is malformed is kept with its raw arguments, so the agent loop reports it to the model
instead of dropping it silently. All parsers run in linear time in the reply's length.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from agentrft.messages import ToolCall

#: The formats `tool_call_format` can answer.
TOOL_CALL_FORMATS = ("hermes", "llama3_json", "harmony")


class ParsedReply(NamedTuple):
    """A reply split into the text shown to the user, its tool calls and its reasoning."""

    content: str
    calls: list[ToolCall]
    reasoning: str | None = None


def tool_call_format(chat_template: str) -> str:
    """The tool-call format a chat template teaches its model (one of TOOL_CALL_FORMATS)."""
    if "<|channel|>" in chat_template:
        return "harmony"
    if "<tool_call>" in chat_template:
        return "hermes"
    if "<|python_tag|>" in chat_template or (
        "<|eot_id|>" in chat_template and '"parameters"' in chat_template
    ):
        return "llama3_json"
    return "hermes"


_DECODER = json.JSONDecoder()
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
_ARGS_KEY = re.compile(r'"(?:parameters|arguments)"\s*:')


def parse_llama3_json(text: str, *, id_prefix: str = "call") -> ParsedReply:
    """Llama 3.x custom tool calls: `[<|python_tag|>]{"name": ..., "parameters": ...}[; {...}]`.

    A reply that does not start with a JSON object (after `<|python_tag|>`) is plain
    content. A reply that starts like a call but is not valid JSON becomes one call with the
    name found by pattern (or "") and the raw arguments text.
    """
    body = text.strip()
    tagged = body.startswith("<|python_tag|>")
    if tagged:
        body = body[len("<|python_tag|>") :].lstrip()
    if not body.startswith("{"):
        return ParsedReply(text.strip(), [])
    calls: list[ToolCall] = []
    pos = 0
    while pos < len(body) and body[pos] == "{":
        try:
            data, end = _DECODER.raw_decode(body, pos)
        except (json.JSONDecodeError, RecursionError):
            data, end = None, -1
        if not (isinstance(data, dict) and isinstance(data.get("name"), str)):
            if calls or (not tagged and _NAME.search(body, pos) is None):
                break  # not a call: what is left is content
            name = _NAME.search(body, pos)
            calls.append(
                ToolCall(
                    id=f"{id_prefix}_{len(calls)}",
                    name=name.group(1) if name else "",
                    arguments=_raw_arguments(body[pos:]),
                )
            )
            return ParsedReply("", calls)
        args = data.get("parameters", data.get("arguments", {}))
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append(
            ToolCall(id=f"{id_prefix}_{len(calls)}", name=data["name"], arguments=arguments)
        )
        pos = end
        while pos < len(body) and body[pos] in " \t\r\n;":
            pos += 1
    if not calls:
        return ParsedReply(text.strip(), [])
    return ParsedReply(body[pos:].strip(), calls)


def _raw_arguments(call_text: str) -> str:
    """What follows `"parameters":` (or `"arguments":`) in a malformed call, less the call
    object's closing brace; the whole text when there is no such key."""
    key = _ARGS_KEY.search(call_text)
    if key is None:
        return call_text.strip()
    rest = call_text[key.end() :].strip()
    return (rest[:-1] if rest.endswith("}") else rest).strip()


_MESSAGE_ENDS = ("<|end|>", "<|call|>", "<|return|>")
_RECIPIENT = re.compile(r"to=([^\s<]+)")
_CHANNEL = re.compile(r"<\|channel\|>\s*([^\s<]+)")


def parse_harmony(text: str, *, id_prefix: str = "call") -> ParsedReply:
    """gpt-oss Harmony messages (the text after the prompt's `<|start|>assistant`).

    Messages to `functions.NAME` (recipient before or after the channel) become calls with
    the message body as raw arguments; `analysis` messages are the reasoning; `final`
    messages and recipient-less `commentary` (preambles) are the content. A message cut off
    before its `<|message|>` is dropped; one cut off inside its body keeps what it has.
    """
    calls: list[ToolCall] = []
    content: list[str] = []
    reasoning: list[str] = []
    for k, segment in enumerate(text.split("<|start|>")):
        if k > 0:
            segment = segment.removeprefix("assistant")  # the role of a following message
        header, sep, body = segment.partition("<|message|>")
        if not sep:
            continue
        for end in _MESSAGE_ENDS:
            cut = body.find(end)
            if cut >= 0:
                body = body[:cut]
        recipient = _RECIPIENT.search(header)
        channel = _CHANNEL.search(header)
        if recipient is not None:
            to = recipient.group(1)
            name = to.removeprefix("functions.")
            calls.append(
                ToolCall(id=f"{id_prefix}_{len(calls)}", name=name, arguments=body.strip())
            )
        elif channel is not None and channel.group(1) == "analysis":
            reasoning.append(body.strip())
        else:
            content.append(body.strip())
    text_out = "\n".join(c for c in content if c)
    thought = "\n".join(r for r in reasoning if r) or None
    return ParsedReply(text_out, calls, thought)
