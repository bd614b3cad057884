"""The local engine when the environment offers a tool mid-episode: the turn offered the
new tools is rendered afresh with them (as a server re-renders a chat), so its prompt no
longer extends the previous one; training splits the episode there and still trains on
exactly the sampled ids, each after the very prompt it was sampled from. SFT renders each
stretch of turns with the tools it was offered."""

from __future__ import annotations

import pytest

from agentrft import Sampling, ScriptedPolicy, run_episode
from agentrft.backends.local.algo.sequences import sft_sequences, trajectory_sequences
from agentrft.backends.local.inference.chat_tokens import ChatTokenizer, TokenPolicy
from agentrft.backends.local.inference.sampler import Generation, TokenSampler
from agentrft.testing import UnlockTask

REPLIES = [
    '<tool_call>{"name": "guess", "arguments": {"word": "apple"}}</tool_call>',
    "Can I get help?",
    '<tool_call>{"name": "hint", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "guess", "arguments": {"word": "cherry"}}</tool_call>',
]


class _Replay(TokenSampler):
    def __init__(self, chat: ChatTokenizer) -> None:
        self.chat = chat
        self.prompts: list[list[int]] = []

    async def generate(self, prompt_ids, sampling, *, adapter=None) -> Generation:
        self.prompts.append(list(prompt_ids))
        ids = [*self.chat.encode(REPLIES[len(self.prompts) - 1]), self.chat.end_of_turn_id]
        return Generation(token_ids=ids, logprobs=[-0.5] * len(ids), finish_reason="stop")

    async def load_adapter(self, name, path): ...
    async def unload_adapter(self, name): ...
    async def aclose(self): ...


@pytest.fixture(scope="module")
def chat(tiny_156k: str) -> ChatTokenizer:
    from transformers import AutoTokenizer

    return ChatTokenizer(AutoTokenizer.from_pretrained(tiny_156k))


async def test_the_turn_with_new_tools_is_rendered_afresh_and_trained_exactly(chat) -> None:
    sampler = _Replay(chat)
    traj = await run_episode(
        UnlockTask(), "cherry", TokenPolicy(sampler, chat), sampling=Sampling()
    )
    assert traj.solved and len(traj.turns) == 4 and traj.turns[2].tools is not None
    t = traj.turns
    text = [chat.decode(x.prompt_token_ids) for x in t]
    assert all('"name": "hint"' not in s for s in text[:2])
    assert all('"name": "hint"' in s for s in text[2:])
    # turns 1 and 3 extend the prompt before them; turn 2 (new tools) starts over
    for k, chained in ((1, True), (2, False), (3, True)):
        head = [*t[k - 1].prompt_token_ids, *t[k - 1].completion_token_ids]
        assert (t[k].prompt_token_ids[: len(head)] == head) is chained, k
    # turn 2's prompt is the whole conversation rendered with the new tools
    messages = traj.messages[: traj.messages.index(t[2].assistant)]
    assert t[2].prompt_token_ids == chat.render(messages, t[2].tools, add_generation_prompt=True)

    first, second = trajectory_sequences(traj, advantage=1.0)
    assert first.token_ids == [*t[1].prompt_token_ids, *t[1].completion_token_ids]
    assert second.token_ids == [*t[3].prompt_token_ids, *t[3].completion_token_ids]
    trained = [[i for i, m in zip(s.token_ids, s.mask, strict=True) if m] for s in (first, second)]
    assert trained == [
        [*t[0].completion_token_ids, *t[1].completion_token_ids],
        [*t[2].completion_token_ids, *t[3].completion_token_ids],
    ]
    # each trained id follows the prompt it was sampled after
    for seq in (first, second):
        for turn in t:
            p, c = turn.prompt_token_ids, turn.completion_token_ids
            if seq.token_ids[: len(p)] == p:
                assert seq.token_ids[len(p) : len(p) + len(c)] == c
                assert seq.mask[len(p) : len(p) + len(c)] == [1] * len(c)


async def test_sft_renders_each_stretch_with_the_tools_it_was_offered(chat) -> None:
    replies = iter(
        [
            {"name": "guess", "arguments": {"word": "apple"}},
            "Can I get help?",
            {"name": "hint", "arguments": {}},
            {"name": "guess", "arguments": {"word": "cherry"}},
        ]
    )

    def script(messages, tools):
        from agentrft import call

        r = next(replies)
        return r if isinstance(r, str) else call(r["name"], r["arguments"])

    traj = await run_episode(UnlockTask(), "cherry", ScriptedPolicy(script))
    assert traj.solved
    first, second = sft_sequences(traj, chat)
    assert '"name": "hint"' not in chat.decode(first.token_ids)
    assert '"name": "hint"' in chat.decode(second.token_ids)

    def trained(seq) -> str:
        return chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m])

    assert trained(first).count("<|im_end|>") == 2 and "apple" in trained(first)
    assert "Can I get help?" in trained(first) and "hint" not in trained(first)
    assert trained(second).count("<|im_end|>") == 2 and "cherry" in trained(second)
    assert "apple" not in trained(second)  # earlier replies are context there, not trained
    assert (
        second.token_ids
        == chat.render(traj.messages, traj.tools_at(3), add_generation_prompt=False)[
            : len(second.token_ids)
        ]
    )
