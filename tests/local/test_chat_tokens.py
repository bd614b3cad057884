"""Token-exact multi-turn: tool-call parsing, suffix ids, prefix-preservation check."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from agentrft import Sampling, run_episode
from agentrft.backends.local.algo.sequences import sft_sequence, trajectory_sequences
from agentrft.backends.local.inference.chat_tokens import (
    ChatTokenizer,
    TokenPolicy,
    parse_tool_calls,
)
from agentrft.backends.local.inference.sampler import Generation, TokenSampler

from .conftest import FruitGuess


def test_parse_several_calls_and_free_text():
    text = (
        'thinking <tool_call>{"name": "guess", "arguments": {"word": "kiwi"}}</tool_call>\n'
        '<tool_call>\n{"name": "guess", "arguments": "{\\"word\\": \\"plum\\"}"}\n</tool_call>'
    )
    content, calls = parse_tool_calls(text, id_prefix="c")
    assert content == "thinking"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("c_0", "guess", {"word": "kiwi"}),
        ("c_1", "guess", {"word": "plum"}),
    ]


def test_parse_keeps_malformed_json_raw():
    content, calls = parse_tool_calls(
        '<tool_call>{"name": "guess", "arguments": {"word": </tool_call>'
    )
    assert content == ""
    assert calls[0].name == "guess"
    assert calls[0].arguments == '{"word":'  # raw: the tool reports malformed JSON
    with pytest.raises(json.JSONDecodeError):
        json.loads(calls[0].arguments)


def test_parse_leaves_an_unterminated_call_in_the_text():
    content, calls = parse_tool_calls('<tool_call>{"name": "guess", "argu')
    assert calls == []
    assert content.startswith("<tool_call>")


@pytest.mark.parametrize(
    ("text", "calls", "unterminated"),
    [
        ('<tool_call>{"name": "guess", "arguments": {}} Inq', 0, True),  # junk for the tag
        ('<tool_call>{"name": "guess", "arguments": {}}', 0, True),  # the tag never came
        ('<tool_call>{"name": "guess", "arguments": {}}</tool_call> <tool_call>{"na', 1, True),
        ('<tool_call>{"name": "guess", "arguments": {}}</tool_call>', 1, False),
        ("kiwi", 0, False),
    ],
)
def test_hermes_replies_say_whether_a_call_was_left_open(text, calls, unterminated):
    from agentrft.backends.local.inference.chat_tokens import hermes_call_left_open

    assert (len(parse_tool_calls(text)[1]), hermes_call_left_open(text)) == (calls, unterminated)


class ReplaySampler(TokenSampler):
    """Replies with fixed texts (encoded + end-of-turn), recording the prompts it got."""

    def __init__(self, chat: ChatTokenizer, replies: list[str], cut: int | None = None):
        self.chat, self.replies, self.cut = chat, list(replies), cut
        self.prompts: list[list[int]] = []

    async def generate(self, prompt_ids, sampling, *, adapter=None) -> Generation:
        self.prompts.append(list(prompt_ids))
        text = self.replies[min(len(self.prompts) - 1, len(self.replies) - 1)]
        ids = [*self.chat.encode(text), self.chat.end_of_turn_id]
        if self.cut is not None and len(self.prompts) == 1:
            return Generation(
                token_ids=ids[: self.cut], logprobs=[-1.0] * self.cut, finish_reason="length"
            )
        return Generation(token_ids=ids, logprobs=[-0.5] * len(ids), finish_reason="stop")

    async def load_adapter(self, name, path): ...
    async def unload_adapter(self, name): ...
    async def aclose(self): ...


def _call(word: str) -> str:
    return f'<tool_call>{{"name": "guess", "arguments": {{"word": "{word}"}}}}</tool_call>'


@pytest.fixture(scope="module")
def chat(tiny_156k: str) -> ChatTokenizer:
    from transformers import AutoTokenizer

    return ChatTokenizer(AutoTokenizer.from_pretrained(tiny_156k))


async def test_multi_turn_prompts_extend_the_sampled_ids(chat: ChatTokenizer):
    sampler = ReplaySampler(chat, [_call("apple"), _call("berry")])
    traj = await run_episode(FruitGuess(), "berry", TokenPolicy(sampler, chat), sampling=Sampling())
    assert traj.solved and len(traj.turns) == 2
    t1, t2 = traj.turns
    # Turn 2's prompt = turn 1's prompt + the sampled ids + the template's suffix.
    head = [*t1.prompt_token_ids, *t1.completion_token_ids]
    assert t2.prompt_token_ids[: len(head)] == head
    suffix = chat.decode(t2.prompt_token_ids[len(head) :])
    assert suffix == (
        "\n<|im_start|>user\n<tool_response>\nWrong. The fruit starts with 'b'.\n"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    # The first prompt is the rendered template with the tools.
    first = chat.decode(t1.prompt_token_ids)
    assert first.startswith("<|im_start|>system\nFind the fruit.\n\n# Tools\n<tools>\n")
    assert '"name": "guess"' in first and first.endswith("<|im_start|>assistant\n")
    # The whole episode is one sequence; exactly the sampled ids are trained.
    (seq,) = trajectory_sequences(traj, advantage=1.0)
    assert seq.token_ids == [*t2.prompt_token_ids, *t2.completion_token_ids]
    trained = [i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m]
    assert trained == [*t1.completion_token_ids, *t2.completion_token_ids]
    masked_text = chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if not m])
    assert "Wrong. The fruit starts with 'b'." in masked_text
    assert len(seq.sampler_logprobs) == len(seq.token_ids)


async def test_truncated_turn_is_closed_and_reported(chat: ChatTokenizer):
    # Turn 1 is cut after 5 tokens, before any complete tool call: finish "length", and the
    # loop records the truncation.
    sampler = ReplaySampler(chat, [_call("apple")], cut=5)
    traj = await run_episode(FruitGuess(), "berry", TokenPolicy(sampler, chat), sampling=Sampling())
    assert traj.turns[0].finish_reason == "length"
    assert "truncated" in traj.failure_kinds
    assert "unterminated_tool_call" not in traj.failure_kinds  # cut off, not left open


async def test_an_unclosed_call_is_a_format_fault_even_where_text_is_an_answer(chat):
    # A text-answer task takes any text reply as the answer; a reply that opened a call and
    # wrote junk where `</tool_call>` belongs is still text (the environment sees it as
    # before), but the turn is reported as a broken call, so format credit can blame it.
    from agentrft.backends.local.run.health import format_faults
    from agentrft.testing.relay import CodeRelayTask

    class TextRelay(CodeRelayTask):
        answer = "text"

    task = TextRelay()
    row = task.make_dataset("train", 1, 0)[0]["prompt"]
    sampler = ReplaySampler(chat, ['<tool_call>{"name": "read_code", "arguments": {}} Inq'])
    traj = await run_episode(task, row, TokenPolicy(sampler, chat), sampling=Sampling())
    assert len(traj.turns) == 1 and traj.turns[0].assistant.tool_calls is None
    assert traj.failure_kinds == ["unterminated_tool_call"]
    assert traj.reward.outcome == "no_submit"  # the environment's verdict is unchanged
    assert format_faults(traj) == [True]


async def test_seeds_are_per_episode_and_turn(chat: ChatTokenizer):
    seen: list[int | None] = []

    class SeedSampler(ReplaySampler):
        async def generate(self, prompt_ids, sampling, *, adapter=None):
            seen.append(sampling.seed)
            return await super().generate(prompt_ids, sampling, adapter=adapter)

    policy = TokenPolicy(SeedSampler(chat, [_call("apple"), _call("berry")]), chat, seed=10)
    await run_episode(FruitGuess(), "berry", policy)
    await run_episode(FruitGuess(), "berry", policy)
    assert seen[:2] == [10, 11]  # episode 0, turns 0 and 1
    assert seen[2] == 1010  # episode 1 starts at seed + 1000


class _NotPrefixTokenizer:
    """Wraps a tokenizer with a template that drops earlier assistant text (like templates
    that strip past reasoning): not prefix-preserving."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.chat_template = (
            "{%- for m in messages -%}"
            "{%- if m.role == 'assistant' and not loop.last -%}"
            "{{ '<|im_start|>assistant\\n<|im_end|>\\n' }}"
            "{%- else -%}"
            "{{ '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}"
            "{%- endif -%}{%- endfor -%}"
            "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tok, name)

    def apply_chat_template(self, messages, **kw):
        kw["chat_template"] = self.chat_template
        return self._tok.apply_chat_template(messages, **kw)

    def __call__(self, *a, **kw):
        return self._tok(*a, **kw)


async def test_non_prefix_preserving_template_warns_loudly(chat, caplog):
    odd = ChatTokenizer(_NotPrefixTokenizer(chat.tokenizer))
    sampler = ReplaySampler(odd, ["first reply", _call("berry")])
    policy = TokenPolicy(sampler, odd)

    class Nudging(FruitGuess):
        def environment(self, instance):
            env = super().environment(instance)
            env.on_text_reply = lambda text: "Please call the tool."  # type: ignore[method-assign]
            return env

    with caplog.at_level(logging.WARNING):
        traj = await run_episode(Nudging(), "berry", policy)
    assert policy.warned_not_prefix_preserving
    assert "NOT PREFIX-PRESERVING" in caplog.text
    # Still token-exact: turn 2 extends turn 1's ids.
    t1, t2 = traj.turns[:2]
    head = [*t1.prompt_token_ids, *t1.completion_token_ids]
    assert t2.prompt_token_ids[: len(head)] == head


async def test_sft_sequence_trains_assistant_ids_only(chat: ChatTokenizer):
    task = FruitGuess()
    traj = await run_episode(task, "cherry", task.expert())
    seq = sft_sequence(traj, chat)
    assert seq is not None
    trained = chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m])
    assert trained == _call("apple") + "<|im_end|>" + _call("cherry") + "<|im_end|>"
    assert seq.token_ids[-1] == chat.end_of_turn_id


async def test_expert_sequences_are_cut_to_max_length(chat: ChatTokenizer):
    from agentrft.backends.local.run.sft import expert_sequences

    task = FruitGuess()
    full = await expert_sequences(task, ["cherry"], chat)
    n = len(full[0].token_ids) - 3  # still holds trained (assistant) ids
    cut = await expert_sequences(task, ["cherry"], chat, max_length=n)
    assert len(cut[0].token_ids) == n
    assert cut[0].token_ids == full[0].token_ids[:n]
    assert cut[0].mask == full[0].mask[:n]
    # A cut that leaves no assistant id leaves nothing to train on: the game is dropped.
    first = full[0].mask.index(1)
    assert await expert_sequences(task, ["cherry"], chat, max_length=first) == []


def test_cpu_preset_caps_sft_sequences(tmp_path):
    from agentrft.backends.local.run.engine import apply_cpu_preset, uses_tiny_model
    from agentrft.config_model import load_config

    config = load_config(overrides=[f"local.run_dir={tmp_path}"])
    if not uses_tiny_model(config):
        pytest.skip("the CPU preset applies only to the tiny model without CUDA")
    assert apply_cpu_preset(config).local.max_sequence_length == 2048
    mine = load_config(overrides=["local.max_sequence_length=512"])
    assert apply_cpu_preset(mine).local.max_sequence_length == 512
