"""Running a head of tokens that many sequences share once instead of once per sequence:
within a micro-batch (a GRPO group's common system prompt, tools and first turns) and
across a whole step (`SharedPrefix`), with gradients that equal running every sequence
in full.
"""

from __future__ import annotations

from typing import Any

from agentrft.backends.local.algo.sequences import TrainSequence

__all__ = [
    "MIN_SHARED_HEAD",
    "SharedPrefix",
    "common_len",
    "decoder_and_head",
    "head_length",
    "hidden_with_shared_head",
    "step_head_length",
]


#: Shared heads shorter than this are not worth a separate forward pass.
MIN_SHARED_HEAD = 16


def shared_head_len(batch: list[TrainSequence]) -> int:
    if len(batch) < 2:
        return 0
    first = batch[0].token_ids
    limit = min(len(s.token_ids) for s in batch) - 1
    n = 0
    while n < limit and all(s.token_ids[n] == first[n] for s in batch):
        n += 1
    return n if n >= MIN_SHARED_HEAD else 0


def head_length(batch: list[TrainSequence], prefix: int = 0, share_prefix: bool = True) -> int:
    """How many leading tokens `batch` runs once for all its rows: its common head when
    worth a pass, and with a step prefix of `prefix` tokens at least that (for a lone
    sequence: all but its last token, predicted from the last shared position)."""
    shared = shared_head_len(batch) if share_prefix else 0
    if prefix:
        longest = min(len(s.token_ids) for s in batch) - 1
        shared = max(shared, min(longest, common_len(batch)), prefix)
    return shared


def common_len(batch: list[TrainSequence]) -> int:
    first = batch[0].token_ids
    n = min(len(s.token_ids) for s in batch)
    for i in range(n):
        if any(s.token_ids[i] != first[i] for s in batch):
            return i
    return n


def cache_keyword(decoder: Any) -> str:
    import inspect

    # transformers renamed `past_key_values` to `cache` (5.2x); accept both versions.
    params = inspect.signature(decoder.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def keys_and_values(layer: Any) -> tuple[Any, Any]:
    """A cache layer's keys and values, which are the whole state of a full-attention layer;
    a linear-attention layer (hybrid models) keeps a recurrent state a prefix cannot share."""
    from transformers import cache_utils

    linear = getattr(cache_utils, "LinearAttentionCacheLayerMixin", ())
    if isinstance(layer, linear) or not isinstance(layer, cache_utils.CacheLayerMixin):
        raise ValueError(
            f"the shared-prefix pass needs key/value cache layers; this model's cache has a "
            f"{type(layer).__name__}"
        )
    return layer.keys, layer.values


class SharedPrefix:
    """A head of tokens every sequence of a step shares (system prompt, tools), run once per
    step instead of once per micro-batch.

    Its outputs (hidden states and each layer's keys and values) are handed to the
    micro-batches as leaf tensors; their gradients add up there over the step, and
    `backward()` sends the sum through the head's graph once, at the end. The result equals
    running the head in every micro-batch (the chain rule is linear in the incoming
    gradient), at the cost of one head forward and one backward per step.
    """

    def __init__(self, decoder: Any, ids: list[int], device: Any) -> None:
        import torch
        from transformers import DynamicCache

        self.length = len(ids)
        cache = DynamicCache()
        hidden = decoder(
            input_ids=torch.tensor([ids], device=device),
            position_ids=torch.arange(self.length, device=device)[None],
            use_cache=True,
            **{cache_keyword(decoder): cache},
        ).last_hidden_state
        kv = [keys_and_values(layer) for layer in cache.layers]
        self._outputs = [hidden, *(t for pair in kv for t in pair)]

        def leaf(t: Any) -> Any:
            # Layers below the first LoRA layer produce no graph: nothing to send back there.
            return t.detach().requires_grad_(torch.is_grad_enabled() and t.requires_grad)

        self.hidden = leaf(hidden)
        self.kv = [(leaf(k), leaf(v)) for k, v in kv]

    def cache(self) -> Any:
        """A fresh cache holding the prefix (one row), for one micro-batch."""
        from transformers import DynamicCache

        cache = DynamicCache()
        for i, (k, v) in enumerate(self.kv):
            cache.update(k, v, i)
        return cache

    def backward(self) -> None:
        """Send the gradients the micro-batches left on the prefix's outputs into the model."""
        import torch

        leaves = [self.hidden, *(t for pair in self.kv for t in pair)]
        pairs = [(o, leaf.grad) for o, leaf in zip(self._outputs, leaves, strict=True)
                 if leaf.grad is not None]  # fmt: skip
        if pairs:
            torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        self._outputs = []


def hidden_with_shared_head(
    decoder: Any, ids: Any, attn: Any, shared: int, prefix: SharedPrefix | None = None
) -> Any:
    """Hidden states predicting tokens 1..T-1 (B, T-1, H), the head computed once (and its
    first `prefix.length` tokens taken from the step's shared prefix)."""
    import torch
    from transformers import DynamicCache

    keyword = cache_keyword(decoder)
    b, t = ids.shape
    if prefix is None:
        cache, start, parts = DynamicCache(), 0, []
    else:
        cache, start, parts = prefix.cache(), prefix.length, [prefix.hidden]
    if shared > start:
        parts.append(
            decoder(
                input_ids=ids[:1, start:shared],
                position_ids=torch.arange(start, shared, device=ids.device)[None],
                use_cache=True,
                **{keyword: cache},
            ).last_hidden_state
        )
    head = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
    cache.batch_repeat_interleave(b)  # differentiable: the rows' gradients add up in the head
    tail = decoder(
        input_ids=ids[:, shared:],
        attention_mask=attn,
        position_ids=torch.arange(shared, t, device=ids.device)[None].expand(b, -1),
        use_cache=True,
        **{keyword: cache},
    ).last_hidden_state
    return torch.cat([head.expand(b, -1, -1), tail[:, :-1]], dim=1)


def decoder_and_head(model: Any) -> tuple[Any, Any] | None:
    """(transformer body, lm_head) of a causal LM, looking through a PEFT wrapper."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = getattr(base, "model", None)
    head = getattr(base, "lm_head", None)
    if decoder is None or head is None or getattr(base.config, "final_logit_softcapping", None):
        return None
    return decoder, head


def step_head_length(sequences: list[TrainSequence]) -> int:
    """Tokens every sequence of the step shares (0 when too few to be worth a pass)."""
    length = min(common_len(sequences), min(len(s.token_ids) for s in sequences) - 1)
    return length if length >= MIN_SHARED_HEAD else 0
