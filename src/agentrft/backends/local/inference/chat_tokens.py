"""Token-exact multi-turn chat over a `TokenSampler`.

Re-tokenizing decoded text changes ids ("BPE is not a bijection"), so an episode keeps its
ids end to end: turn 1 renders the chat template (with the tools) to ids; every later turn
is `previous prompt + sampled ids + suffix`, where the suffix is exactly what the template
adds for the tool / user messages and the next assistant header. Training then sees the
very ids that were sampled.

Tool calls are parsed from the completion text in the format the chat template teaches
(tool_parsers.py): Hermes/Qwen `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
blocks (several per reply; `parse_tool_calls` below), Llama 3.x JSON, or gpt-oss Harmony. A
call whose JSON is malformed is kept with its raw text so the agent loop reports it to the
model.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from agentrft.backends.local.inference.sampler import TokenSampler
from agentrft.backends.local.inference.tool_parsers import (
    ParsedReply,
    parse_harmony,
    parse_llama3_json,
    tool_call_format,
)
from agentrft.messages import Message, ToolCall
from agentrft.policy import Completion, Policy, PolicyError, Sampling

log = logging.getLogger(__name__)

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
_ARGS_KEY = re.compile(r'"arguments"\s*:')


def parse_tool_calls(text: str, *, id_prefix: str = "call") -> tuple[str, list[ToolCall]]:
    """Split a reply into its free text and its `<tool_call>` blocks.

    Returns `(content, calls)`; `content` is the text outside the blocks, stripped. A block
    that is not valid JSON becomes a call with the name found by pattern (or "") and the raw
    arguments text, so the loop answers "malformed JSON" instead of silently dropping it.
    An unterminated `<tool_call>` at the end stays in the content (it is not a call).
    """
    calls: list[ToolCall] = []
    outside: list[str] = []  # the text between the blocks
    pos = 0
    for i, (start, body_start, body_end, end) in enumerate(_tool_call_spans(text)):
        outside.append(text[pos:start])
        pos = end
        body = text[body_start:body_end].strip()
        call_id = f"{id_prefix}_{i}"
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested too deeply
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            args = data.get("arguments", data.get("parameters", {}))
            arguments = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(id=call_id, name=data["name"], arguments=arguments))
            continue
        name = _NAME.search(body)
        raw_args = _raw_arguments(body)
        calls.append(ToolCall(id=call_id, name=name.group(1) if name else "", arguments=raw_args))
    outside.append(text[pos:])
    return "".join(outside).strip(), calls


# The two helpers below replace `<tool_call>(.*?)</tool_call>` and
# `"arguments"\s*:\s*(.*?)\}?\s*$`, which give the same answers but rescan the rest of the
# reply from every unclosed tag (or every position): 24 s on a 176 KB reply of opening tags.
# A model can write anything; these take linear time.


def _tool_call_spans(text: str) -> list[tuple[int, int, int, int]]:
    """`(start, body_start, body_end, end)` of each `<tool_call>...</tool_call>` block, in
    order; the first closing tag after an opening one closes it."""
    spans = []
    pos = 0
    while (start := text.find(_OPEN, pos)) >= 0:
        body_start = start + len(_OPEN)
        body_end = text.find(_CLOSE, body_start)
        if body_end < 0:
            break  # unterminated: it stays in the content (and so does any later block)
        pos = body_end + len(_CLOSE)
        spans.append((start, body_start, body_end, pos))
    return spans


def _raw_arguments(body: str) -> str:
    """The text after the first `"arguments":` of a malformed call, less one closing brace
    (the call object's) and the whitespace around it; the whole body when there is none."""
    key = _ARGS_KEY.search(body)
    if key is None:
        return body
    rest = body[key.end() :].strip()
    return (rest[:-1] if rest.endswith("}") else rest).strip()


class ChatTokenizer:
    """A Hugging Face tokenizer plus its chat template, seen as ids.

    `end_of_turn_ids` are the ids that close an assistant turn (the sampler's stop ids):
    the template's end-of-turn tokens, the eos token, and `eos_token_ids` (pass the model's
    generation-config eos list). In Harmony (gpt-oss) `<|end|>` closes one message of a turn
    that goes on, so there only `<|return|>` / `<|call|>` (and eos) stop sampling.
    `tool_format` names the tool-call parser (tool_parsers.py), picked from the template
    unless given. A template that ignores `tools` is replaced by a ChatML tool template when
    the vocabulary is ChatML (`<|im_start|>` / `<|im_end|>`), with a warning.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        eos_token_ids: Iterable[int] = (),
        tool_format: str | None = None,
    ) -> None:
        template = getattr(tokenizer, "chat_template", None)
        if not template or not isinstance(template, str):
            raise ValueError(
                "the tokenizer has no chat_template; the local backend needs a chat model "
                "(or set tokenizer.chat_template)"
            )
        self.tokenizer = tokenizer
        self.chat_template: str = _with_tools(tokenizer, template)
        harmony = (
            self._token_id("<|return|>") is not None and self._token_id("<|call|>") is not None
        )
        ids: set[int] = set(eos_token_ids)
        for tok in _END_OF_TURN_TOKENS:
            tid = self._token_id(tok)
            if tid is not None and not (harmony and tok == "<|end|>"):
                ids.add(tid)
        if tokenizer.eos_token_id is not None:
            ids.add(int(tokenizer.eos_token_id))
        if not ids:
            raise ValueError("the tokenizer has neither an eos token nor a known end-of-turn token")
        self.end_of_turn_ids: frozenset[int] = frozenset(ids)
        # Where a rendered message ends (what turn_suffix cuts at): Harmony's <|end|> too.
        end = self._token_id("<|end|>")
        self._message_end_ids = self.end_of_turn_ids | ({end} if end is not None else set())
        # The id to close a turn that was cut off (the template's own end-of-message token).
        closers = (self._token_id(t) for t in _CLOSE_TOKENS)
        self.end_of_turn_id: int = next(
            (t for t in closers if t is not None),
            int(tokenizer.eos_token_id) if tokenizer.eos_token_id is not None else min(ids),
        )
        self.tool_format = tool_format or tool_call_format(self.chat_template)
        if self.tool_format not in _PARSERS:
            raise ValueError(
                f"tool_format {self.tool_format!r} is unknown; use one of {', '.join(_PARSERS)}"
            )

    def _token_id(self, token: str) -> int | None:
        return _token_id(self.tokenizer, token)

    def parse_reply(self, text: str, *, id_prefix: str = "call") -> ParsedReply:
        """Content, tool calls and reasoning of a sampled reply, in the template's format."""
        return _PARSERS[self.tool_format](text, id_prefix=id_prefix)

    def call_left_open(self, text: str) -> bool:
        """Whether the reply opened a tool call and never closed it. Only the hermes format
        has a closing marker to miss: a Llama 3 JSON call is the whole reply, and a Harmony
        message cut short keeps what it has."""
        return self.tool_format == "hermes" and hermes_call_left_open(text)

    def render(
        self,
        messages: list[Message] | list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
    ) -> list[int]:
        dicts = [_template_message(m) for m in messages]
        text = self.tokenizer.apply_chat_template(
            dicts,
            tools=tools or None,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            chat_template=self.chat_template,
        )
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def strip_end_of_turn(self, ids: list[int]) -> list[int]:
        return ids[:-1] if ids and ids[-1] in self.end_of_turn_ids else ids

    def turn_suffix(
        self,
        history: list[Message],
        new_messages: list[Message],
        tools: list[dict[str, Any]] | None,
    ) -> tuple[list[int], bool]:
        """Ids the template adds after the last assistant turn's end-of-turn token.

        `history` ends with that assistant message. Returns `(suffix, prefix_preserving)`;
        when the template re-renders earlier turns differently once more messages follow
        (not prefix-preserving), the suffix comes from a neutral stand-in conversation.
        """
        try:
            before = self.render(history, tools, add_generation_prompt=False)
            after = self.render([*history, *new_messages], tools, add_generation_prompt=True)
        except Exception:  # e.g. Llama 3's "only supports single tool-calls at once"
            before = after = []
        cut = _last_index(before, self._message_end_ids)
        if cut is not None and after[: cut + 1] == before[: cut + 1]:
            return after[cut + 1 :], True
        # Stand-in conversations: the first whose rendering the template extends as a prefix.
        # (A template that rewrites earlier assistant turns may still handle a bare user turn.)
        stand_ins = [
            [Message(role="user", content="."), Message(role="assistant", content=".")],
            [Message(role="user", content=".")],
        ]
        for stand_in in stand_ins:
            try:
                before = self.render(stand_in, tools, add_generation_prompt=False)
                after = self.render([*stand_in, *new_messages], tools, add_generation_prompt=True)
            except Exception:  # e.g. a template that insists on alternating roles
                continue
            cut = _last_index(before, self._message_end_ids)
            if cut is not None and after[: cut + 1] == before[: cut + 1]:
                return after[cut + 1 :], False
        raise PolicyError(
            "the chat template does not render a conversation as a prefix of its "
            "continuation, even for a stand-in conversation; token-exact multi-turn is "
            "impossible with it",
            kind="policy_error",
        )


#: Tokens that end an assistant turn in the templates we know (ChatML, Llama 3.x incl. the
#: ipython turn's <|eom_id|>, Phi-3, Gemma, Harmony).
_END_OF_TURN_TOKENS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
    "<|return|>",
    "<|call|>",
)
#: The one to close a cut-off turn with, in order of preference.
_CLOSE_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")


def _parse_hermes(text: str, *, id_prefix: str = "call") -> ParsedReply:
    content, calls = parse_tool_calls(text, id_prefix=id_prefix)
    return ParsedReply(content, calls)


def hermes_call_left_open(text: str) -> bool:
    """Whether a `<tool_call>` opens after the last closed block: a call the model began and
    never closed (the parser leaves it in the content)."""
    spans = _tool_call_spans(text)
    return text.find(_OPEN, spans[-1][3] if spans else 0) >= 0


_PARSERS = {"hermes": _parse_hermes, "llama3_json": parse_llama3_json, "harmony": parse_harmony}


def _template_message(message: Message | dict[str, Any]) -> dict[str, Any]:
    """A message as chat templates expect it: content "" rather than None (templates test
    `"x" in content` or `content | trim`), and tool-call arguments as a dict when they are
    valid JSON (Llama 3's and gpt-oss's templates `tojson` them: a string comes out
    double-encoded)."""
    out = dict(message.to_openai() if isinstance(message, Message) else message)
    if out.get("content") is None:
        out["content"] = ""
    if out.get("tool_calls"):
        calls = []
        for call in out["tool_calls"]:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                try:
                    args = json.loads(fn["arguments"])
                except (json.JSONDecodeError, RecursionError):
                    args = None
                if isinstance(args, dict):
                    call = {**call, "function": {**fn, "arguments": args}}
            calls.append(call)
        out["tool_calls"] = calls
    return out


def _with_tools(tokenizer: Any, template: str) -> str:
    """`template`, or a ChatML tool template when `template` never mentions `tools` (the
    model would not be shown the tools at all) and the vocabulary is ChatML."""
    if "tools" in template:
        return template
    from agentrft.backends.local.models.tiny_model import CHAT_TEMPLATE

    chatml = all(_token_id(tokenizer, t) is not None for t in ("<|im_start|>", "<|im_end|>"))
    key = hash(template)
    if chatml:
        if key not in _WARNED_TEMPLATES:
            _WARNED_TEMPLATES.add(key)
            # Info, not a warning: the replacement is what makes such a model usable with
            # tools (SmolLM2, the README's main job), and nothing the user needs to fix.
            log.info(
                "the model's chat template ignores tools; rendering with a ChatML template "
                "that lists them and takes Hermes <tool_call> calls instead"
            )
        return CHAT_TEMPLATE
    if key not in _WARNED_TEMPLATES:
        _WARNED_TEMPLATES.add(key)
        log.warning(
            "the model's chat template ignores tools and is not ChatML: the model will not "
            "see the tool schemas (set tokenizer.chat_template to a template that renders them)"
        )
    return template


_WARNED_TEMPLATES: set[int] = set()


def _token_id(tokenizer: Any, token: str) -> int | None:
    """The id of `token` when the vocabulary has it as one token."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if isinstance(tid, int) and tid >= 0 and tid != tokenizer.unk_token_id:
        return tid
    return None


def _last_index(ids: list[int], targets: frozenset[int]) -> int | None:
    for i in range(len(ids) - 1, -1, -1):
        if ids[i] in targets:
            return i
    return None


class TokenPolicy(Policy):
    """A `Policy` over a `TokenSampler`; `session()` gives the per-episode token state.

    `adapter` names the LoRA adapter every request goes to (None: the base model); the
    trainer swaps it after each weight sync. `seed` makes sampling reproducible: episode
    `k` (in `session()` order) turn `t` samples with seed `seed + 1000 * k + t`.
    """

    name = "local"

    def __init__(
        self,
        sampler: TokenSampler,
        tokenizer: ChatTokenizer | Any,
        *,
        adapter: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.sampler = sampler
        self.chat = tokenizer if isinstance(tokenizer, ChatTokenizer) else ChatTokenizer(tokenizer)
        self.adapter = adapter
        self.seed = seed
        self._sessions = itertools.count()
        # Shared with `sibling`s, so a warning given once is given once for all of them.
        self._warned = [False]

    @property
    def warned_not_prefix_preserving(self) -> bool:
        return self._warned[0]

    @warned_not_prefix_preserving.setter
    def warned_not_prefix_preserving(self, value: bool) -> None:
        self._warned[0] = value

    def sibling(self, *, adapter: str | None, seed: int | None) -> TokenPolicy:
        """A policy on the same sampler and chat with its own adapter and seed (a batch
        played ahead of the trainer); its once-only warnings are this policy's."""
        twin = TokenPolicy(self.sampler, self.chat, adapter=adapter, seed=seed)
        twin._warned = self._warned
        return twin

    def reseed(self, seed: int | None) -> None:
        """Restart the episode counter with a new base seed (one per training step)."""
        self.seed = seed
        self._sessions = itertools.count()

    def session(self) -> TokenSession:
        k = next(self._sessions)
        return TokenSession(self, None if self.seed is None else self.seed + 1000 * k)

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        # Without a session there is no id history: a one-shot turn rendered from messages.
        return await self.session().complete(messages, tools, sampling)


class TokenSession(Policy):
    """One episode's token state: the prompt ids and sampled ids of the last turn."""

    name = "local"

    def __init__(self, parent: TokenPolicy, seed: int | None) -> None:
        self.parent = parent
        self.seed = seed
        self._turn = 0
        self._prompt: list[int] | None = None
        self._completion: list[int] = []
        self._history_len = 0  # messages seen up to and including our last reply
        self._tools: list[dict[str, Any]] | None = None  # the tools the prompt was rendered with

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        chat = self.parent.chat
        # Templates render the tools at the top: when the environment changed them, the
        # whole conversation is rendered again, as a server would, and this turn's prompt
        # no longer extends the last one (training then starts a new sequence here).
        retools = self._tools is not tools and self._tools != tools
        if self._prompt is None or retools:
            prompt = chat.render(messages, tools, add_generation_prompt=True)
        else:
            history, new = messages[: self._history_len], messages[self._history_len :]
            suffix, preserving = chat.turn_suffix(history, new, tools)
            if not preserving and not self.parent.warned_not_prefix_preserving:
                self.parent.warned_not_prefix_preserving = True
                log.warning(
                    "THE CHAT TEMPLATE IS NOT PREFIX-PRESERVING: re-rendering the conversation "
                    "changes earlier turns. Training keeps the sampled ids (token-exact), but "
                    "a server that re-renders chats will show the model different context."
                )
            closed = self._completion
            if not closed or closed[-1] not in chat.end_of_turn_ids:
                closed = [*closed, chat.end_of_turn_id]  # a cut-off turn: close it (masked)
            prompt = [*self._prompt, *closed, *suffix]

        seed = None if self.seed is None else self.seed + self._turn
        if seed is not None:
            sampling = sampling.model_copy(update={"seed": seed})
        gen = await self.parent.sampler.generate(prompt, sampling, adapter=self.parent.adapter)
        self._turn += 1
        self._prompt = prompt
        self._completion = list(gen.token_ids)
        self._tools = tools

        text = chat.decode(chat.strip_end_of_turn(gen.token_ids))
        content, calls, reasoning = chat.parse_reply(text, id_prefix=f"call_{self._turn}")
        message = Message(
            role="assistant", content=content or None, tool_calls=calls or None, reasoning=reasoning
        )
        self._history_len = len(messages) + 1  # the loop appends `message` next
        finish = "length" if gen.finish_reason == "length" else "tool_calls" if calls else "stop"
        return Completion(
            message=message,
            finish_reason=finish,
            prompt_token_ids=prompt,
            completion_token_ids=list(gen.token_ids),
            logprobs=list(gen.logprobs),
            prompt_tokens=len(prompt),
            completion_tokens=len(gen.token_ids),
            # A reply cut off by max_tokens is reported as truncated, not as unclosed.
            unterminated_call=finish != "length" and chat.call_left_open(text),
        )
