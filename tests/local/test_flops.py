"""The step's FLOP count: what flops.py counts matches the model's shapes and the work the
trainer does; the matmul peak is a positive, plausible rate."""

from __future__ import annotations

import pytest

from agentrft.backends.local.algo.flops import ModelShape, matmul_peak, segment_context
from agentrft.backends.local.algo.sequences import TrainSequence


def test_segment_context_sums_the_attention_spans():
    assert segment_context(0, 3) == 1 + 2 + 3
    assert segment_context(10, 2) == 11 + 12
    assert segment_context(5, 0) == 0


def test_forward_flops_count_weights_attention_and_trained_logits():
    shape = ModelShape(body_weights=1000, layers=2, attention_width=8, hidden=4, vocab=10)
    assert shape.forward(3, 0, 0) == 2 * 1000 * 3
    assert shape.forward(0, 5, 0) == 4 * 2 * 8 * 5
    assert shape.forward(0, 0, 2) == 2 * 4 * 10 * 2


def test_the_shape_of_a_real_model_and_the_trainers_count(tiny_156k):
    from agentrft.backends.local.algo.trainer import LoRATrainer, micro_batches

    trainer = LoRATrainer(tiny_156k, lora_rank=4, lora_alpha=8, micro_batch_size=2)
    shape = ModelShape.of(trainer.model)
    cfg = trainer.model.get_base_model().config
    per_layer = sum(p.numel() for n, p in trainer.model.get_base_model().named_parameters()
                    if ".layers.0." in n and p.dim() == 2 and "lora_" not in n)  # fmt: skip
    assert shape.body_weights == per_layer * cfg.num_hidden_layers
    head = list(range(3, 23))
    seqs = [TrainSequence(head + [5 + i] * (2 + i), [0] * 20 + [1] * (2 + i)) for i in range(3)]
    prefix = trainer._prefix_length(seqs)
    assert prefix == 20  # the common head; the sequences differ from token 20 on
    batches = micro_batches(seqs, 2, shared=prefix)
    tokens, flops = trainer.work(batches, prefix)
    # The prefix once; then every row's tail, padded to its micro-batch's longest.
    runs = [20] + [len(b) * (max(len(s.token_ids) for s in b) - 20) for b in batches]
    assert tokens == sum(runs)
    metrics = trainer.step([TrainSequence(s.token_ids, s.mask, advantage=1.0) for s in seqs])
    assert metrics["trainer/tokens"] == tokens
    assert metrics["trainer/flops"] == pytest.approx(2 * flops)


def test_the_matmul_peak_is_a_plausible_rate():
    peak = matmul_peak("float32", 1, 256, 256, 256)
    assert 1e8 < peak < 1e14
