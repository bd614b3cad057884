"""A Hugging Face transformers sampler behind `TokenSampler` (the CPU path, vLLM's stand-in).

Concurrent `generate` calls are gathered into batches: every episode of a step asks for
its next turn at about the same time, so one left-padded forward with a KV cache serves
them all. Requests for different adapters never share a batch (the vLLM trap of an
adapter leaking into base requests cannot happen here either). Each row draws from its
own seeded generator, so a request's random draws do not depend on which batch it landed
in (its logits may still differ in the last float bits with the batch's shape).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.backends.local.inference.growing_cache import growing_cache
from agentrft.backends.local.inference.sampler import Generation, SamplerError
from agentrft.policy import Sampling


@dataclass
class _Request:
    prompt_ids: list[int]
    sampling: Sampling
    adapter: str | None
    future: asyncio.Future[Generation] = field(repr=False)


class HFSampler:
    """Samples with a transformers causal LM; PEFT adapters are loaded by name.

    `stop_ids` end a turn (default: the tokenizer's eos and `<|im_end|>`-style ids).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        stop_ids: set[int] | frozenset[int] | None = None,
        max_batch_size: int = 64,
        seed: int = 0,
    ) -> None:
        import torch

        from agentrft.backends.local.inference.chat_tokens import ChatTokenizer

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(stop_ids or ChatTokenizer(tokenizer).end_of_turn_ids)
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.stop_ids)
        )
        self.max_batch_size = max_batch_size
        #: Shared heads shorter than this are prefilled per row (not worth a separate pass).
        self.min_shared_prefix = 16
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 1 << 30))
        # transformers renamed `past_key_values` to `cache` (5.2x); accept both versions.
        # Merged adapter copies share the base's class, so one look serves every batch.
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        params = inspect.signature(base.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self.adapters: dict[str, str] = {}  # name -> path
        self._merged: dict[str, Any] = {}  # name -> base copy with the adapter merged in
        self._generator = torch.Generator().manual_seed(seed)
        self._lock = threading.Lock()  # the adapter table (swaps run in threads)
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # batches run (for tests and the live view)
        self.generated_tokens = 0

    @classmethod
    def from_pretrained(
        cls, path: str | Path, *, device: str = "cpu", dtype: str = "auto", **kwargs: Any
    ) -> HFSampler:
        from agentrft.backends.local.models.model_loading import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(str(path), device=device, dtype=dtype)
        return cls(model, tokenizer, **kwargs)

    # -- TokenSampler -------------------------------------------------------------------

    async def generate(
        self, prompt_ids: list[int], sampling: Sampling, *, adapter: str | None = None
    ) -> Generation:
        if not prompt_ids:
            raise SamplerError("generate() needs a non-empty prompt")
        if adapter is not None and adapter not in self.adapters:
            raise SamplerError(
                f"adapter {adapter!r} is not loaded; loaded: {', '.join(self.adapters) or 'none'}"
            )
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._worker is None or self._worker.done():
            self._loop = loop
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._serve())
        assert self._queue is not None
        fut: asyncio.Future[Generation] = loop.create_future()
        self._queue.put_nowait(_Request(list(prompt_ids), sampling, adapter, fut))
        return await fut

    async def load_adapter(self, name: str, path: str) -> None:
        if not (Path(path) / "adapter_config.json").is_file():
            raise SamplerError(f"{path} is not a PEFT adapter directory (no adapter_config.json)")
        await asyncio.to_thread(self._load_adapter, name, str(path))

    async def unload_adapter(self, name: str) -> None:
        await asyncio.to_thread(self._unload_adapter, name)

    async def aclose(self) -> None:
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
        self._worker = None

    # -- adapters -----------------------------------------------------------------------

    def _load_adapter(self, name: str, path: str) -> None:
        """Merge the adapter into a private copy of the base weights.

        A merged copy samples at plain-model speed (PEFT's extra LoRA matmuls cost ~3x on
        small models), and the pristine base is never modified, so repeated syncs cannot
        drift it the way merge/unmerge round trips would.
        """
        import copy

        merged = _merge_lora_fast(self.model, path)
        if merged is None:  # a PEFT variant the fast path does not handle
            from peft import PeftModel

            merged = PeftModel.from_pretrained(copy.deepcopy(self.model), path).merge_and_unload()
        merged.eval()
        with self._lock:
            self._merged[name] = merged
            self.adapters[name] = path

    def _unload_adapter(self, name: str) -> None:
        with self._lock:
            self._merged.pop(name, None)
            self.adapters.pop(name, None)

    # -- batching -----------------------------------------------------------------------

    async def _serve(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            first = await queue.get()
            # Let every episode that is about to ask (same step, same turn) join this batch.
            stable = 0
            while stable < 8:
                n = queue.qsize()
                await asyncio.sleep(0)
                stable = stable + 1 if queue.qsize() == n else 0
            pending = [first]
            while not queue.empty():
                pending.append(queue.get_nowait())
            groups: dict[str | None, list[_Request]] = {}
            for req in pending:
                groups.setdefault(req.adapter, []).append(req)
            for adapter, reqs in groups.items():
                for i in range(0, len(reqs), self.max_batch_size):
                    chunk = [r for r in reqs[i : i + self.max_batch_size] if not r.future.done()]
                    if not chunk:
                        continue
                    try:
                        outs = await asyncio.to_thread(self._generate_batch, chunk, adapter)
                    except Exception as exc:
                        for r in chunk:
                            if not r.future.done():
                                r.future.set_exception(
                                    SamplerError(f"generation failed: {type(exc).__name__}: {exc}")
                                )
                        continue
                    for r, out in zip(chunk, outs, strict=True):
                        if not r.future.done():
                            r.future.set_result(out)

    def _generate_batch(self, reqs: list[_Request], adapter: str | None) -> list[Generation]:
        import torch

        with self._lock:
            if adapter is not None and adapter not in self._merged:
                raise SamplerError(f"adapter {adapter!r} was unloaded")
            model = self.model if adapter is None else self._merged[adapter]
        with torch.inference_mode():
            outs = self._decode_loop(model, reqs)
        self.batches += 1
        self.generated_tokens += sum(len(o.token_ids) for o in outs)
        return outs

    def _decode_loop(self, model: Any, reqs: list[_Request]) -> list[Generation]:
        import torch

        device = next(model.parameters()).device
        n = len(reqs)
        lens = [len(r.prompt_ids) for r in reqs]
        budgets = [
            max(0, min(r.sampling.max_tokens, self.max_positions - ln))
            for r, ln in zip(reqs, lens, strict=True)
        ]
        gens = [
            torch.Generator().manual_seed(r.sampling.seed)
            if r.sampling.seed is not None
            else self._generator
            for r in reqs
        ]
        temps = torch.tensor([r.sampling.temperature for r in reqs], dtype=torch.float32)
        top_ps = torch.tensor([r.sampling.top_p for r in reqs], dtype=torch.float32)
        out_ids: list[list[int]] = [[] for _ in reqs]
        out_lp: list[list[float]] = [[] for _ in reqs]
        finish: list[str | None] = ["length" if b == 0 else None for b in budgets]
        cache_kw = self._cache_kw
        cache = growing_cache()

        # The rows of a batch share a head (system prompt, tools), and the rollouts of one
        # GRPO group share much more (the user turn, often the first call and its reply):
        # run each shared part once and copy its KV, then prefill only what is each row's.
        step_input, mask, step_pos = self._prefill(model, reqs, cache, device)
        rows = list(range(n))  # the request each row of the batch decodes
        for _ in range(max(budgets, default=0)):
            logits = model(
                input_ids=step_input,
                attention_mask=mask,
                position_ids=step_pos,
                use_cache=True,
                logits_to_keep=1,  # the prefill needs only the last position's logits
                **{cache_kw: cache},
            ).logits[:, -1, :]
            logits = logits.to(torch.promote_types(logits.dtype, torch.float32)).cpu()
            live = [j for j, i in enumerate(rows) if finish[i] is None]
            picked = torch.tensor(rows, dtype=torch.long)
            toks, lps = _sample_rows(
                logits, temps[picked], top_ps[picked], [gens[rows[j]] for j in live], live
            )
            next_tokens = torch.full((len(rows),), self.pad_id, dtype=torch.long)
            for j, tok, lp in zip(live, toks, lps, strict=True):
                i = rows[j]
                r = reqs[i]
                next_tokens[j] = tok
                out_ids[i].append(tok)
                out_lp[i].append(lp)
                if tok in self.stop_ids or (
                    r.sampling.stop and _hits_stop(self.tokenizer, out_ids[i], r.sampling.stop)
                ):
                    finish[i] = "stop"
                elif len(out_ids[i]) >= budgets[i]:
                    finish[i] = "length"
            if all(f is not None for f in finish):
                break
            step_input = next_tokens.view(len(rows), 1).to(device)
            step_pos = step_pos[:, -1:] + 1
            mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=device)], 1)
            # Every decode step reads each row's whole KV, finished or not: once a quarter of
            # the rows are done, drop them (the copy costs about one step; a GRPO batch's
            # calls end at different lengths, and a runaway reply no longer holds 31 rows).
            still = [j for j, i in enumerate(rows) if finish[i] is None]
            if len(still) <= 0.75 * len(rows):
                keep = torch.tensor(still, dtype=torch.long, device=device)
                cache.reorder_cache(keep)
                step_input, mask, step_pos = step_input[keep], mask[keep], step_pos[keep]
                rows = [rows[j] for j in still]
        return [
            Generation(token_ids=t, logprobs=lp, finish_reason=f or "length")  # type: ignore[arg-type]
            for t, lp, f in zip(out_ids, out_lp, finish, strict=True)
        ]

    def _prefill(
        self, model: Any, reqs: list[_Request], cache: Any, device: Any
    ) -> tuple[Any, Any, Any]:
        """Fill `cache` with every prompt but its last position's input, sharing work.

        Three layers: the head every row shares (run once), each cluster's extension (rows
        whose prompts share `min_shared_prefix` more tokens: one row per cluster), and each
        row's own tail (left-padded). Padding sits between the parts; the attention mask
        hides it and the position ids skip it. Returns (the last part's input ids, the
        attention mask so far, its position ids), the decode loop's first input.
        """
        import torch

        n = len(reqs)
        prompts = [r.prompt_ids for r in reqs]
        lens = [len(p) for p in prompts]
        shared = min(_common_prefix_len(prompts), min(lens) - 1) if n > 1 else 0
        if shared < self.min_shared_prefix:
            shared = 0
        if shared:
            model(
                input_ids=torch.tensor([prompts[0][:shared]], device=device),
                position_ids=torch.arange(shared, device=device)[None],
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_kw: cache},
            )
        clusters = _clusters(prompts, shared, self.min_shared_prefix) if n > 2 else []
        parts: list[tuple[list[list[int]], Any]] = []  # (rows' ids, how rows map to cache rows)
        if clusters and len(clusters) < n:
            row_cluster = [0] * n
            for c, (members, _) in enumerate(clusters):
                for i in members:
                    row_cluster[i] = c
            parts.append(([prompts[m[0]][shared:end] for m, end in clusters], len(clusters)))
            parts.append(([prompts[i][clusters[row_cluster[i]][1] :] for i in range(n)],
                          torch.tensor(row_cluster, device=device)))  # fmt: skip
        else:
            parts.append(([p[shared:] for p in prompts], None))
        mask = torch.ones((1, shared), dtype=torch.long, device=device)
        pos_base = torch.full((1,), shared, dtype=torch.long, device=device)
        ids = step_pos = None
        for k, (segments, expand) in enumerate(parts):
            rows = len(segments)
            if k == 0:  # from the one head row to this part's rows
                if shared:
                    cache.batch_repeat_interleave(rows)
                mask, pos_base = mask.expand(rows, -1), pos_base.expand(rows)
            else:  # from cluster rows to request rows
                cache.reorder_cache(expand)
                mask, pos_base = mask.index_select(0, expand), pos_base.index_select(0, expand)
            width = max(len(t) for t in segments)
            ids = torch.full((rows, width), self.pad_id, dtype=torch.long)
            seg_mask = torch.zeros((rows, width), dtype=torch.long)
            for i, t in enumerate(segments):
                ids[i, width - len(t) :] = torch.tensor(t)
                seg_mask[i, width - len(t) :] = 1
            ids, seg_mask = ids.to(device), seg_mask.to(device)
            step_pos = pos_base[:, None] + (seg_mask.cumsum(-1) - 1).clamp(min=0)
            mask = torch.cat([mask, seg_mask], dim=1)
            if k < len(parts) - 1:  # the last part is the decode loop's first input
                model(
                    input_ids=ids,
                    attention_mask=mask,
                    position_ids=step_pos,
                    use_cache=True,
                    logits_to_keep=1,
                    **{self._cache_kw: cache},
                )
                pos_base = pos_base + seg_mask.sum(-1)
        return ids, mask, step_pos


def _merge_lora_fast(base: Any, path: str) -> Any | None:
    """A copy of `base` with a plain LoRA adapter merged in: `W += (alpha / r) * B @ A`.

    ~10x faster than building a PeftModel to merge it (it runs at every weight sync).
    Returns None for anything but a plain LoRA (DoRA, rsLoRA, per-module ranks, extra
    trained modules, fan-in/fan-out layers), which then goes through PEFT.
    """
    import copy
    import json

    import torch
    from safetensors.torch import load_file

    cfg = json.loads((Path(path) / "adapter_config.json").read_text())
    weights_file = Path(path) / "adapter_model.safetensors"
    plain = (
        cfg.get("peft_type") == "LORA"
        and not cfg.get("use_dora")
        and not cfg.get("use_rslora")
        and not cfg.get("rank_pattern")
        and not cfg.get("alpha_pattern")
        and not cfg.get("modules_to_save")
        and not cfg.get("fan_in_fan_out")
        and weights_file.is_file()
    )
    if not plain:
        return None
    tensors = load_file(str(weights_file))
    scale = float(cfg["lora_alpha"]) / float(cfg["r"])
    merged = copy.deepcopy(base)
    with torch.no_grad():
        for key, a in tensors.items():
            if not key.endswith(".lora_A.weight"):
                if not key.endswith(".lora_B.weight"):
                    return None  # something besides LoRA matrices was trained
                continue
            prefix = key[: -len(".lora_A.weight")]
            b = tensors.get(prefix + ".lora_B.weight")
            name = prefix.removeprefix("base_model.model.")
            try:
                module = merged.get_submodule(name)
            except AttributeError:
                return None
            weight = getattr(module, "weight", None)
            if b is None or weight is None or weight.shape != (b.shape[0], a.shape[1]):
                return None
            wide = torch.promote_types(weight.dtype, torch.float32)
            delta = (b.to(wide) @ a.to(wide)) * scale
            weight.add_(delta.to(device=weight.device, dtype=weight.dtype))
    return merged


def _common_prefix_len(seqs: list[list[int]]) -> int:
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        tok = first[i]
        if any(s[i] != tok for s in seqs):
            return i
    return n


def _clusters(prompts: list[list[int]], shared: int, min_extra: int) -> list[tuple[list[int], int]]:
    """Rows whose prompts share at least `min_extra` tokens past `shared`, as (row indices,
    end of their common prefix), the end kept at least one token short of each prompt; rows
    that share nothing more form clusters of one (end = `shared`). Neighbours in sorted
    order are compared, so a cluster is a run of prompts with a common extension."""
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    out: list[tuple[list[int], int]] = []
    for i in order:
        p = prompts[i]
        if out:
            members, end = out[-1]
            head = prompts[members[0]]
            common = min(_common_prefix_len([head[:end], p]), len(p) - 1)
            if common - shared >= min_extra:
                out[-1] = ([*members, i], common)
                continue
        out.append(([i], len(p) - 1))
    return [(members, end if len(members) > 1 else shared) for members, end in out]


def _sample_rows(
    logits: Any, temps: Any, top_ps: Any, generators: list[Any], rows: list[int]
) -> tuple[list[int], list[float]]:
    """Sample one id for each of `rows` (vectorised; one uniform draw per row's generator).

    Logprobs are under the temperature-scaled distribution, before top-p truncation; a
    temperature of 0 is greedy (logprob under the untempered distribution).
    """
    import torch

    idx = torch.tensor(rows, dtype=torch.long)
    x, t, top_p = logits[idx], temps[idx], top_ps[idx]
    greedy = t <= 0
    logp = torch.log_softmax(x / torch.where(greedy, 1.0, t).unsqueeze(-1), dim=-1)
    probs = logp.exp()
    if bool((top_p < 1.0).any()):
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        keep = (sorted_p.cumsum(-1) - sorted_p) < top_p.unsqueeze(-1)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p * keep)
    cdf = probs.cumsum(-1)
    u = torch.cat([torch.rand(1, generator=g) for g in generators]) * cdf[:, -1]
    picked = torch.searchsorted(cdf, u.unsqueeze(-1)).squeeze(-1).clamp(max=x.shape[-1] - 1)
    picked = torch.where(greedy, x.argmax(-1), picked)
    lps = logp.gather(-1, picked.unsqueeze(-1)).squeeze(-1)
    return picked.tolist(), lps.tolist()


def _hits_stop(tokenizer: Any, ids: list[int], stops: list[str]) -> bool:
    tail = tokenizer.decode(ids[-16:], skip_special_tokens=False)
    return any(s in tail for s in stops)
