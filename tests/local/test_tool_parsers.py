"""Tool-call parsers per template family (Llama 3 JSON, Harmony) and the format choice."""

from __future__ import annotations

import json
import time

import pytest

from agentrft.backends.local.inference.tool_parsers import (
    parse_harmony,
    parse_llama3_json,
    tool_call_format,
)


def _calls(reply):
    return [(c.id, c.name, c.arguments) for c in reply.calls]


def test_format_is_picked_from_the_template():
    assert tool_call_format("...<|start|>assistant<|channel|>final<|message|>...") == "harmony"
    assert tool_call_format("<|im_start|>... <tool_call>\n{...}\n</tool_call>") == "hermes"
    llama = '<|start_header_id|>assistant<|end_header_id|>{"name": x, "parameters": y}<|eot_id|>'
    assert tool_call_format(llama) == "llama3_json"
    assert tool_call_format("<|python_tag|>") == "llama3_json"
    # Hermes-3-Llama-3.1 has Llama's vocabulary but Hermes calls.
    assert tool_call_format('<|eot_id|> "parameters" <tool_call>') == "hermes"
    assert tool_call_format("{{ messages }}") == "hermes"


def test_llama3_one_call_with_parameters():
    reply = parse_llama3_json('{"name": "guess", "parameters": {"word": "kiwi"}}', id_prefix="c")
    assert reply.content == ""
    assert _calls(reply) == [("c_0", "guess", '{"word": "kiwi"}')]


def test_llama3_python_tag_several_calls_and_trailing_text():
    text = (
        '<|python_tag|>{"name": "guess", "arguments": {"word": "fig"}}; '
        '{"name": "guess", "parameters": "{\\"word\\": \\"plum\\"}"} Done.'
    )
    reply = parse_llama3_json(text, id_prefix="c")
    assert [(n, json.loads(a)) for _, n, a in _calls(reply)] == [
        ("guess", {"word": "fig"}),
        ("guess", {"word": "plum"}),
    ]
    assert reply.content == "Done."


def test_llama3_plain_text_and_plain_json_are_content():
    assert parse_llama3_json("The fruit is a kiwi.").calls == []
    assert parse_llama3_json("The fruit is a kiwi.").content == "The fruit is a kiwi."
    assert parse_llama3_json('{"answer": 4}').calls == []
    assert parse_llama3_json('{"answer": 4}').content == '{"answer": 4}'


def test_llama3_malformed_call_is_kept_raw():
    reply = parse_llama3_json('{"name": "guess", "parameters": {"word": ')
    assert _calls(reply) == [("call_0", "guess", '{"word":')]
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.calls[0].arguments)
    # After <|python_tag|> even a nameless object is a (malformed) call.
    assert parse_llama3_json("<|python_tag|>{oops").calls[0].name == ""


def test_harmony_reasoning_call_and_final():
    text = (
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant to=functions.guess"
        '<|channel|>commentary json<|message|>{"word": "kiwi"}<|call|>'
    )
    reply = parse_harmony(text, id_prefix="c")
    assert _calls(reply) == [("c_0", "guess", '{"word": "kiwi"}')]
    assert reply.reasoning == "Think." and reply.content == ""
    final = parse_harmony("<|channel|>final<|message|>It is a kiwi.<|return|>")
    assert final.calls == [] and final.content == "It is a kiwi." and final.reasoning is None


def test_harmony_cut_off_messages():
    # Cut inside a body: what it has is kept; cut inside a header: nothing to read.
    assert parse_harmony("<|channel|>analysis<|message|>Hmm, mayb").reasoning == "Hmm, mayb"
    assert parse_harmony("<|channel|>analysis<|message|>x<|end|><|start|>assistant to=fun") == (
        "",
        [],
        "x",
    )


@pytest.mark.parametrize("parse", [parse_llama3_json, parse_harmony])
def test_parsers_take_linear_time_on_hostile_replies(parse):
    # 200 KB of openers a model might emit in a loop: well under a second either way.
    for text in ("{" * 200_000, '{"name": "' * 20_000, "<|start|>assistant to=" * 10_000):
        start = time.perf_counter()
        parse(text)
        assert time.perf_counter() - start < 1.0
