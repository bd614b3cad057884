"""A tiny random-init chat model with tool support, built offline and cached.

Used by the tests and as the CPU default when no model is given. Measured gotchas
(docs/local-engine.md) shape it:
- Llama architecture: with `model_type == "qwen2"` AutoTokenizer rebuilds its own pipeline
  and silently ignores our tokenizer.json.
- Multi-character specials (`<|im_start|>`, `<tool_call>` ...) are added tokens, so a
  policy cannot game a reward by spelling them out character by character.
- `initializer_range≈0.1`: at 0.02 the frozen random embeddings cap the probability LoRA
  can reach and learning stalls.

The tokenizer is byte-level BPE (vocab 512) trained on a small built-in corpus, so any text
encodes and decodes losslessly. The chat template is ChatML with Hermes/Qwen tool calls:
tools listed in the system turn, assistant calls as `<tool_call>{json}</tool_call>`, tool
replies as `<tool_response>` blocks inside a user turn.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Literal

TinySize = Literal["156k", "1m", "5m"]

#: Bump when the tokenizer, template or configs change: it is part of the cache key.
BUILD_VERSION = 1

VOCAB_SIZE = 512
MAX_POSITIONS = 8192

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
#: Added but not "special": decoding with skip_special_tokens keeps them (tool-call parsing).
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# (hidden, layers, heads, intermediate) -> ~156K, ~1M, ~5M parameters with vocab 512.
SIZES: dict[str, tuple[int, int, int, int]] = {
    "156k": (64, 2, 2, 128),
    "1m": (128, 4, 4, 384),
    "5m": (256, 6, 4, 640),
}

# ChatML + Hermes tool calls. Every literal goes through an expression so Jinja whitespace
# control cannot eat a newline; the assistant rendering is exactly what the model is meant
# to emit, so sampled tool calls re-render identically.
CHAT_TEMPLATE = (
    "{%- set sys = messages[0].content if (messages and messages[0].role == 'system') "
    "else none -%}"
    "{%- if tools or sys is not none -%}"
    "{{ '<|im_start|>system\\n' }}{{ sys if sys is not none else '' }}"
    "{%- if tools -%}"
    "{{ '\\n\\n' if sys else '' }}{{ '# Tools\\n<tools>\\n' }}"
    "{%- for t in tools -%}{{ (t | tojson) + '\\n' }}{%- endfor -%}"
    '{{ \'</tools>\\nTo call a tool, reply with <tool_call>{"name": <tool-name>, '
    '"arguments": <args-json-object>}</tool_call>\' }}'
    "{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' and loop.first -%}"
    "{%- elif m.role == 'assistant' -%}"
    "{{ '<|im_start|>assistant\\n' }}{{ m.content if m.content else '' }}"
    "{%- for tc in (m.tool_calls or []) -%}"
    "{%- set f = tc.function if tc.function is defined else tc -%}"
    "{{ '<tool_call>{\"name\": ' + (f.name | tojson) + ', \"arguments\": ' }}"
    "{{ f.arguments if f.arguments is string else (f.arguments | tojson) }}"
    "{{ '}</tool_call>' }}"
    "{%- endfor -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}"
    "{{ '<|im_start|>user\\n' }}{%- else -%}{{ '\\n' }}{%- endif -%}"
    "{{ '<tool_response>\\n' + (m.content or '') + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}"
    "{{ '<|im_end|>\\n' }}{%- endif -%}"
    "{%- else -%}"
    "{{ '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

# Text the BPE merges are learned from: chat scaffolding, JSON schema words, tool-call
# syntax and plain English. Five-letter answer words are left out on purpose so guesses
# stay spelled letter by letter.
_CORPUS = [
    "You are a helpful assistant. Use the tools to answer the user's question.",
    "Think step by step, then call exactly one tool per turn when a tool is needed.",
    'To call a tool, reply with <tool_call>{"name": <tool-name>, "arguments": {}}</tool_call>',
    '{"type": "function", "function": {"name": "guess_word", "description": "Guess a word.", '
    '"parameters": {"type": "object", "properties": {"guess": {"type": "string", '
    '"description": "The guess."}}, "required": ["guess"]}}}',
    '{"name": "submit", "arguments": {"value": "the answer", "amount": 12.5, "items": []}}',
    "Guess 1/6: -> C=gray, R=gray, A=yellow, N=gray, E=green",
    "Current Knowledge:\n- Correct Position (Green): _ _ _ _ E",
    "- In Word, Wrong Position (Yellow): 'A' (at least 1)",
    "- Not in Word (Gray): C, N, R\n- Words Already Guessed:\n- Guesses Remaining: 5",
    "Correct, you solved it! The word was. Error: the guess must be 5 letters a-z.",
    "Guess the 5-letter word. You have 6 guesses. Each reply gives feedback per letter.",
    "The expense report lists the date, the amount, the category and the receipt number.",
    "Error: unknown tool. Available tools: none. Invalid arguments for the tool.",
    "the of and to in is that it for on with as was at by an be this are from or have not",
    "user assistant system tool response result error value string number object array",
    "0 1 2 3 4 5 6 7 8 9 10 100 2024-01-31 true false null",
]


def cache_root() -> Path:
    """`$AGENTRFT_CACHE` or `~/.cache/agentrft`: where built tiny models live."""
    return Path(os.environ.get("AGENTRFT_CACHE") or Path.home() / ".cache" / "agentrft")


def tiny_model_path(size: TinySize = "1m", seed: int = 0) -> Path:
    """The cache directory of the tiny model `size`/`seed` (built or not)."""
    key = json.dumps(
        {"v": BUILD_VERSION, "size": SIZES[size], "seed": seed, "vocab": VOCAB_SIZE,
         "template": CHAT_TEMPLATE, "corpus": _CORPUS},
        sort_keys=True,
    )  # fmt: skip
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_root() / "tiny-models" / f"llama-{size}-s{seed}-{digest}"


def ensure_tiny_model(size: TinySize = "1m", seed: int = 0) -> Path:
    """Return the directory of the tiny model `size`, building it once if absent.

    The build writes into a temporary sibling and renames it, so a crash never leaves a
    half-written model in the cache.
    """
    if size not in SIZES:
        raise ValueError(f"tiny model size {size!r} is unknown; use one of {', '.join(SIZES)}")
    path = tiny_model_path(size, seed)
    if (path / "config.json").is_file() and (path / "tokenizer.json").is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", dir=path.parent))
    try:
        build_tiny_model(tmp, size=size, seed=seed)
        try:
            tmp.rename(path)
        except OSError:  # another process built it first
            if not (path / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def build_tokenizer():  # -> transformers.PreTrainedTokenizerFast
    """The byte-level BPE tokenizer with ChatML specials and tool tags as added tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(SPECIAL_TOKENS) - len(TOOL_TOKENS),
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(out_dir: str | Path, *, size: TinySize = "1m", seed: int = 0) -> Path:
    """Build and `save_pretrained` the tokenizer and a random-init Llama into `out_dir`."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a 1-shard save needs no progress bar
    out_dir = Path(out_dir)
    tokenizer = build_tokenizer()
    hidden, layers, heads, inter = SIZES[size]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=MAX_POSITIONS,
        initializer_range=0.1,
        tie_word_embeddings=False,  # vLLM's full-weight reload mishandles tied embeddings
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id], pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    # Pin the generic fast tokenizer class so AutoTokenizer uses our tokenizer.json as is.
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return out_dir
