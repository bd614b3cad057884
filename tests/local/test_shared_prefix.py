"""A step's shared head is run once and its gradient sent back once: the same gradient as
running every sequence in full (float64, tiny model)."""

from __future__ import annotations

import random

import pytest

from agentrft.backends.local.algo.sequences import TrainSequence


def _sequences(vocab: int) -> list[TrainSequence]:
    """Two GRPO-like groups: a 40-token head all share, 20 more each group shares, then
    tails of their own (some trained tokens in every part but the head)."""
    rng = random.Random(0)
    head = [rng.randrange(3, vocab) for _ in range(40)]
    seqs = []
    for g in range(2):
        group = [rng.randrange(3, vocab) for _ in range(20)]
        for _ in range(3 + g):
            tail = [rng.randrange(3, vocab) for _ in range(rng.randrange(1, 12))]
            ids = head + group + tail
            mask = [0] * 50 + [1] * 10 + [int(j % 3 != 0) for j in range(len(tail))]
            seqs.append(TrainSequence(ids, mask, advantage=rng.gauss(0, 1)))
    return seqs


def _gradient(trainer, seqs):
    captured = {}

    def capture():
        captured.update({n: p.grad.clone() for n, p in trainer.model.named_parameters()
                         if p.requires_grad})  # fmt: skip

    trainer.optimizer.step = capture
    trainer.step(seqs)
    return captured


@pytest.fixture(scope="module")
def trainer(tiny_156k):
    import torch

    from agentrft.backends.local.algo.trainer import LoRATrainer

    t = LoRATrainer(tiny_156k, lora_rank=4, lora_alpha=8, dtype="float64", max_grad_norm=1e9)
    with torch.no_grad():  # a LoRA that is not zero, so every weight gets a gradient
        for p in t.params:
            p.add_(0.05 * torch.randn_like(p))
    return t


@pytest.mark.parametrize("micro_batch_size", [2, 3, 4])
def test_the_step_prefix_gives_the_gradient_of_full_sequences(trainer, micro_batch_size):
    import torch

    from agentrft.backends.local.algo import shared_prefix
    from agentrft.backends.local.algo import trainer as module

    seqs = _sequences(trainer.model.config.vocab_size)
    trainer.micro_batch_size = len(seqs)  # one micro-batch: no step prefix
    whole = _gradient(trainer, seqs)
    trainer.micro_batch_size = micro_batch_size
    assert trainer._step_prefix(seqs, module.micro_batches(seqs, micro_batch_size)) is not None
    split = _gradient(trainer, seqs)
    original = shared_prefix.MIN_SHARED_HEAD
    shared_prefix.MIN_SHARED_HEAD = 10**9  # no sharing at all: every sequence run in full
    try:
        plain = _gradient(trainer, seqs)
    finally:
        shared_prefix.MIN_SHARED_HEAD = original
    assert whole.keys() == split.keys() == plain.keys()
    for name in whole:
        # float64, but Llama's RMSNorm computes in float32: runs that split the work
        # differently agree to ~1e-7 of the largest entry (measured), not to 1e-15.
        atol = 1e-6 * float(plain[name].abs().max())
        torch.testing.assert_close(split[name], plain[name], rtol=1e-5, atol=atol)
        torch.testing.assert_close(whole[name], plain[name], rtol=1e-5, atol=atol)
    assert any(float(g.abs().sum()) > 0 for g in plain.values())


def test_the_kl_reference_is_read_through_the_step_prefix_too(trainer):
    import dataclasses

    import torch

    seqs = _sequences(trainer.model.config.vocab_size)
    saved_loss, saved_ref = trainer.loss, trainer.reference
    trainer.loss = dataclasses.replace(trainer.loss, kl_beta=0.5)
    trainer.set_reference()
    with torch.no_grad():  # move away from the reference, so the KL term has a gradient
        for p in trainer.params:
            p.add_(0.05 * torch.randn_like(p))
    try:
        trainer.micro_batch_size = len(seqs)
        whole = _gradient(trainer, seqs)
        trainer.micro_batch_size = 2
        split = _gradient(trainer, seqs)
    finally:
        trainer.loss, trainer.reference = saved_loss, saved_ref
    for name in whole:
        atol = 1e-6 * float(whole[name].abs().max())
        torch.testing.assert_close(split[name], whole[name], rtol=1e-5, atol=atol)
