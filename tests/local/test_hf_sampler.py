"""The transformers sampler: batching, seeds, stop ids, adapters swapped by name."""

from __future__ import annotations

import asyncio

import pytest

from agentrft import Sampling
from agentrft.backends.local.inference.sampler import SamplerError, TokenSampler


@pytest.fixture(scope="module")
def sampler(tiny_156k: str):
    import torch

    from agentrft.backends.local.inference.hf_sampler import HFSampler

    from .conftest import TORCH_THREADS

    torch.set_num_threads(TORCH_THREADS)
    # float64: batched, left-padded and shared-head runs sum the same terms in another order,
    # and in float32 that order (AVX2 vs AVX-512 kernels, thread count) moves logprobs by
    # ~1e-6 and may flip a sampled id at a CDF boundary. In float64 the order costs ~1e-15;
    # what remains is the model's own float32 steps (Llama's RMSNorm), the same on every
    # CPU, which round nearly equal inputs to at most one float32 unit apart (~1e-7 here).
    return HFSampler.from_pretrained(tiny_156k, dtype="float64")


def _prompt(sampler, text: str) -> list[int]:
    return sampler.tokenizer(text, add_special_tokens=False)["input_ids"]


async def test_batched_equals_alone_with_seeds(sampler):
    assert isinstance(sampler, TokenSampler)
    prompts = [
        _prompt(sampler, t) for t in ("hello there", "a much longer prompt than the first", "x")
    ]
    sampling = [Sampling(max_tokens=12, seed=s) for s in (1, 2, 3)]
    before = sampler.batches
    together = await asyncio.gather(
        *(sampler.generate(p, s) for p, s in zip(prompts, sampling, strict=True))
    )
    assert sampler.batches == before + 1  # one left-padded batch served all three
    for p, s, g in zip(prompts, sampling, together, strict=True):
        alone = await sampler.generate(p, s)
        assert alone.token_ids == g.token_ids
        assert alone.logprobs == pytest.approx(g.logprobs, abs=1e-6)
        assert len(g.logprobs) == len(g.token_ids) <= 12
        assert all(lp <= 0 for lp in g.logprobs)


async def test_shared_head_is_prefilled_once_and_changes_nothing(sampler):
    head = _prompt(sampler, "a long shared system prompt with tools and the first user turn " * 3)
    tails = [_prompt(sampler, t) for t in (" one", " and a longer second tail", " three!")]
    sampling = [Sampling(max_tokens=10, seed=s, temperature=0.9) for s in (4, 5, 6)]
    calls: list[tuple[int, ...]] = []
    forward = sampler.model.forward

    def spy(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    sampler.model.forward = spy
    try:
        together = await asyncio.gather(
            *(sampler.generate(head + t, s) for t, s in zip(tails, sampling, strict=True))
        )
    finally:
        del sampler.model.forward
    assert calls[0] == (1, len(head))  # the head once, for all rows
    assert calls[1][0] == 3 and calls[1][1] < len(head)  # then only the tails
    for t, s, g in zip(tails, sampling, together, strict=True):
        alone = await sampler.generate(head + t, s)
        assert alone.token_ids == g.token_ids
        assert alone.logprobs == pytest.approx(g.logprobs, abs=1e-6)


async def test_finished_rows_leave_the_batch_and_change_nothing(sampler):
    # Rows whose budget ends early stop costing decode work: the batch narrows once a
    # quarter of its rows are done, and every row still samples what it would alone.
    prompts = [_prompt(sampler, f"prompt number {i} " * (1 + i % 3)) for i in range(8)]
    budgets = [1, 2, 2, 3, 16, 16, 16, 16]
    sampling = [Sampling(max_tokens=b, seed=10 + i) for i, b in enumerate(budgets)]
    widths: list[int] = []
    forward = sampler.model.forward

    def spy(*args, **kwargs):
        widths.append(int(kwargs["input_ids"].shape[0]))
        return forward(*args, **kwargs)

    sampler.model.forward = spy
    try:
        together = await asyncio.gather(
            *(sampler.generate(p, s) for p, s in zip(prompts, sampling, strict=True))
        )
    finally:
        del sampler.model.forward
    # 8 rows, then 5 once three are done (the fourth alone is under a quarter of 5)
    assert widths[-1] <= 5
    assert widths[-1] >= 1 and 8 in widths
    for p, s, g in zip(prompts, sampling, together, strict=True):
        assert len(g.token_ids) <= s.max_tokens
        alone = await sampler.generate(p, s)
        assert alone.token_ids == g.token_ids
        assert alone.logprobs == pytest.approx(g.logprobs, abs=1e-6)


async def test_a_groups_longer_shared_prefix_is_prefilled_once_per_group(sampler):
    # Two GRPO groups (the rows of each share a user turn and a tool reply past the common
    # head) and one row of its own: head once, one row per group, then the rows' tails.
    head = _prompt(sampler, "the system prompt and the tools that every row shares here " * 2)
    groups = [
        _prompt(sampler, " user: ticket one, then its long tool reply with the whole text " * 2),
        _prompt(sampler, " user: ticket two, and a different reply that goes on for long " * 2),
    ]
    tails = [_prompt(sampler, t) for t in (" a", " bb b", " c c c c")]
    prompts = [head + g + t for g in groups for t in tails] + [head + _prompt(sampler, " alone")]
    sampling = [Sampling(max_tokens=8, seed=10 + i, temperature=0.8) for i in range(7)]
    calls: list[tuple[int, ...]] = []
    forward = sampler.model.forward

    def spy(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    sampler.model.forward = spy
    try:
        together = await asyncio.gather(
            *(sampler.generate(p, s) for p, s in zip(prompts, sampling, strict=True))
        )
    finally:
        del sampler.model.forward
    assert calls[0] == (1, len(head))
    assert calls[1][0] == 3  # two groups and the lone row
    assert calls[2][0] == 7 and calls[2][1] <= max(len(t) for t in tails) + 1
    for p, s, g in zip(prompts, sampling, together, strict=True):
        alone = await sampler.generate(p, s)
        assert alone.token_ids == g.token_ids
        assert alone.logprobs == pytest.approx(g.logprobs, abs=1e-6)


async def test_logprobs_match_a_plain_forward(sampler):
    import torch

    prompt = _prompt(sampler, "check the numbers")
    gen = await sampler.generate(prompt, Sampling(max_tokens=6, seed=5, temperature=0.7))
    ids = torch.tensor([prompt + gen.token_ids])
    with torch.no_grad():
        logits = sampler.model(input_ids=ids).logits[0, len(prompt) - 1 : -1] / 0.7
    expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(gen.token_ids)[:, None])
    assert gen.logprobs == pytest.approx(expected.squeeze(-1).tolist(), abs=1e-6)


async def test_finish_reasons(sampler):
    prompt = _prompt(sampler, "stop here")
    gen = await sampler.generate(prompt, Sampling(max_tokens=3, seed=0))
    assert gen.finish_reason == "length" and len(gen.token_ids) == 3
    # Make every id a stop id: the first sampled token ends the turn.
    saved = sampler.stop_ids
    sampler.stop_ids = frozenset(range(len(sampler.tokenizer)))
    try:
        gen = await sampler.generate(prompt, Sampling(max_tokens=8, seed=0))
    finally:
        sampler.stop_ids = saved
    assert gen.finish_reason == "stop" and len(gen.token_ids) == 1


async def test_adapters_by_name_change_logprobs(sampler, tiny_156k, tmp_path):
    from agentrft.backends.local.inference.vllm_adapters import make_adapter

    zero = make_adapter(tiny_156k, tmp_path / "zero", rank=4)
    noisy = make_adapter(tiny_156k, tmp_path / "noisy", rank=4, random_b_std=0.2, seed=1)
    prompt = _prompt(sampler, "adapters")
    s = Sampling(max_tokens=5, seed=3)
    base = await sampler.generate(prompt, s)
    await sampler.load_adapter("zero", str(zero))
    await sampler.load_adapter("noisy", str(noisy))
    via_zero = await sampler.generate(prompt, s, adapter="zero")
    via_noisy = await sampler.generate(prompt, s, adapter="noisy")
    assert via_zero.token_ids == base.token_ids
    assert via_zero.logprobs == pytest.approx(base.logprobs, abs=1e-6)
    assert via_noisy.logprobs[0] != pytest.approx(base.logprobs[0], abs=1e-3)
    # Base requests still see the base model with adapters loaded.
    again = await sampler.generate(prompt, s)
    assert again.logprobs == pytest.approx(base.logprobs, abs=1e-6)
    await sampler.unload_adapter("noisy")
    with pytest.raises(SamplerError, match="adapter 'noisy' is not loaded; loaded: zero"):
        await sampler.generate(prompt, s, adapter="noisy")
    with pytest.raises(SamplerError, match="not a PEFT adapter directory"):
        await sampler.load_adapter("bad", str(tmp_path))
    await sampler.unload_adapter("zero")


def test_fast_lora_merge_matches_peft(tiny_156k, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from agentrft.backends.local.inference.hf_sampler import _merge_lora_fast
    from agentrft.backends.local.inference.vllm_adapters import make_adapter

    adapter = make_adapter(tiny_156k, tmp_path / "a", rank=4, alpha=16, random_b_std=0.1)
    # float64 (see the sampler fixture): the merged weight and PEFT's x @ A @ B differ only
    # by float64 rounding plus one float32 unit in the model's RMSNorm steps.
    base = AutoModelForCausalLM.from_pretrained(tiny_156k, dtype=torch.float64)
    merged = _merge_lora_fast(base, str(adapter))
    assert merged is not None
    ids = torch.tensor([[5, 17, 99, 200, 3, 42]])
    with torch.no_grad():
        peft_logits = PeftModel.from_pretrained(
            AutoModelForCausalLM.from_pretrained(tiny_156k, dtype=torch.float64), str(adapter)
        )(input_ids=ids).logits
        fast = merged(input_ids=ids).logits
        plain = base(input_ids=ids).logits  # the base itself is untouched
    torch.testing.assert_close(fast, peft_logits, rtol=1e-6, atol=1e-6)
    assert not torch.allclose(plain, fast, atol=1e-3)
