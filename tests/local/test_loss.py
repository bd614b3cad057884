"""The GRPO loss and advantages on hand-built tensors (unequal lengths, padding)."""

from __future__ import annotations

import math
import statistics

import pytest

torch = pytest.importorskip("torch")

from agentrft.backends.local.algo.advantages import STD_EPS, compute_advantages  # noqa: E402
from agentrft.backends.local.algo.loss import (  # noqa: E402
    LossInputs,
    LossSettings,
    StepScale,
    k3_kl,
    policy_loss,
)

# Three sequences of 5, 2 and 4 trained tokens in a (3, 6) batch; the rest is padding.
LENGTHS = [5, 2, 4]
MASK = torch.tensor(
    [[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0]], dtype=torch.float32
)
ADV = torch.tensor([1.5, -0.5, 2.0])
MAX_LEN = 8


def _logprobs(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (-torch.rand(3, 6, generator=g) * 3).requires_grad_(True)


def _grad(settings: LossSettings, logp: torch.Tensor, old: torch.Tensor, mask=MASK, adv=ADV):
    scale = StepScale(tokens=int(mask.sum()), sequences=3, max_completion_length=MAX_LEN)
    out = policy_loss(LossInputs(logp, old, adv, mask), settings, scale)
    out.loss.backward()
    return out, logp.grad.clone()


def _expected_weights(normalization: str) -> torch.Tensor:
    if normalization == "dapo":
        return MASK / MASK.sum()
    if normalization == "grpo":
        return MASK / torch.tensor(LENGTHS, dtype=torch.float32).unsqueeze(-1) / 3
    return MASK / (3 * MAX_LEN)


@pytest.mark.parametrize("loss_fn", ["ppo", "importance_sampling", "cispo"])
@pytest.mark.parametrize("normalization", ["dapo", "grpo", "dr_grpo"])
def test_on_policy_gradient_is_minus_advantage_times_weight(loss_fn, normalization):
    logp = _logprobs()
    out, grad = _grad(LossSettings(loss_fn, normalization), logp, logp.detach())
    expected = -ADV.unsqueeze(-1) * _expected_weights(normalization)
    torch.testing.assert_close(grad, expected, rtol=1e-6, atol=1e-7)
    # On-policy, the ratio is 1 everywhere: nothing is clipped.
    assert out.metrics["clip_low_frac"] == 0 and out.metrics["clip_high_frac"] == 0
    assert out.metrics["ratio_mean"] == pytest.approx(1.0)


def test_dapo_weights_are_minus_a_m_over_n_with_explicit_numbers():
    logp = _logprobs()
    _, grad = _grad(LossSettings("ppo", "dapo"), logp, logp.detach())
    n = 11  # 5 + 2 + 4 trained tokens
    assert grad[0, 0].item() == pytest.approx(-1.5 / n)
    assert grad[1, 2].item() == pytest.approx(0.5 / n)
    assert grad[2, 3].item() == pytest.approx(-2.0 / n)
    assert grad[0, 5].item() == 0 and grad[1, 0].item() == 0


def test_ppo_clips_on_both_sides():
    logp = torch.zeros(2, 2, requires_grad=True)
    # Ratios 2.0 (above 1.2) and 0.5 (below 0.8) per row; A>0 on row 0, A<0 on row 1.
    old = torch.log(torch.tensor([[0.5, 2.0], [0.5, 2.0]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.ones(2, 2)
    settings = LossSettings("ppo", "dapo", clip_low_threshold=0.8, clip_high_threshold=1.2)
    out, grad = _grad(settings, logp, old, mask=mask, adv=adv)
    # Row 0 (A>0): ratio 2 is clipped (no gradient); ratio 0.5 is not (gradient -r*A/N).
    assert grad[0, 0].item() == 0.0
    assert grad[0, 1].item() == pytest.approx(-0.5 / 4)
    # Row 1 (A<0): ratio 0.5 is clipped (no gradient); ratio 2 is not (gradient r*|A|/N).
    assert grad[1, 1].item() == 0.0
    assert grad[1, 0].item() == pytest.approx(2.0 / 4)
    assert out.metrics["clip_high_frac"] == pytest.approx(1 / 4)
    assert out.metrics["clip_low_frac"] == pytest.approx(1 / 4)
    # Loss value: -min(r*A, clip(r)*A) summed / 4.
    expected = -(1.2 * 1 + 0.5 * 1 + (-1) * 2.0 + (-1) * 0.8) / 4
    assert out.loss.item() == pytest.approx(expected)


def test_cispo_weight_is_clamped_ratio_detached():
    logp = torch.zeros(1, 2, requires_grad=True)
    old = torch.log(torch.tensor([[0.25, 1.0]]))  # ratios 4.0 and 1.0
    settings = LossSettings("cispo", "dapo", clip_high_threshold=1.2)
    _, grad = _grad(settings, logp, old, mask=torch.ones(1, 2), adv=torch.tensor([1.0]))
    assert grad[0, 0].item() == pytest.approx(-1.2 / 2)  # clamped at 1.2, not 4
    assert grad[0, 1].item() == pytest.approx(-1.0 / 2)


@pytest.mark.parametrize("normalization", ["dapo", "grpo", "dr_grpo"])
def test_micro_batch_split_gives_the_same_gradient(normalization):
    logp = _logprobs(1)
    old = logp.detach() + 0.1 * torch.randn(3, 6, generator=torch.Generator().manual_seed(2))
    settings = LossSettings("ppo", normalization)
    _, whole = _grad(settings, logp, old)

    logp2 = logp.detach().clone().requires_grad_(True)
    scale = StepScale(tokens=int(MASK.sum()), sequences=3, max_completion_length=MAX_LEN)
    total = 0.0
    for rows in ([0], [1, 2]):
        idx = torch.tensor(rows)
        out = policy_loss(LossInputs(logp2[idx], old[idx], ADV[idx], MASK[idx]), settings, scale)
        out.loss.backward()
        total += out.loss.item()
    torch.testing.assert_close(logp2.grad, whole, rtol=1e-6, atol=1e-8)


def test_masked_tokens_have_no_influence():
    settings = LossSettings("ppo", "dapo")
    logp = _logprobs(3)
    old = logp.detach() - 0.05
    a, grad_a = _grad(settings, logp, old)
    # Change every masked position (current and old logprobs) wildly.
    noise = torch.where(MASK.bool(), torch.zeros_like(MASK), torch.full_like(MASK, 7.0))
    logp_b = (logp.detach() - noise).requires_grad_(True)
    b, grad_b = _grad(settings, logp_b, old - 2 * noise)
    assert a.loss.item() == pytest.approx(b.loss.item())
    torch.testing.assert_close(grad_a * MASK, grad_b * MASK)
    assert float((grad_b * (1 - MASK)).abs().sum()) == 0.0


def test_k3_kl_is_zero_on_policy_and_positive_off_policy():
    logp = torch.log(torch.tensor([[0.5, 0.2]]))
    assert torch.allclose(k3_kl(logp, logp), torch.zeros(1, 2))
    ref = torch.log(torch.tensor([[0.4, 0.3]]))
    kl = k3_kl(logp, ref)
    delta = ref - logp
    torch.testing.assert_close(kl, torch.exp(delta) - delta - 1)
    assert (kl > 0).all()


def test_kl_term_adds_beta_times_k3():
    logp = torch.zeros(1, 2, requires_grad=True)
    ref = torch.log(torch.tensor([[0.5, 0.8]]))
    scale = StepScale(tokens=2, sequences=1, max_completion_length=2)
    base = policy_loss(
        LossInputs(logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 2), ref),
        LossSettings(kl_beta=0.0),
        scale,
    )
    with_kl = policy_loss(
        LossInputs(logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 2), ref),
        LossSettings(kl_beta=0.1),
        scale,
    )
    expected_kl = float(k3_kl(logp.detach(), ref).mean())
    assert with_kl.loss.item() - base.loss.item() == pytest.approx(0.1 * expected_kl)
    assert with_kl.metrics["kl"] == pytest.approx(expected_kl)


def test_unknown_names_are_explained():
    logp = torch.zeros(1, 1)
    scale = StepScale(1, 1, 1)
    with pytest.raises(
        ValueError, match="loss_fn 'nope' is unknown; available: cispo, importance_sampling, ppo"
    ):
        policy_loss(
            LossInputs(logp, logp, torch.zeros(1), torch.ones(1, 1)), LossSettings("nope"), scale
        )
    with pytest.raises(ValueError, match="advantage_method 'x' is unknown"):
        compute_advantages([1.0, 2.0], 2, method="x")


# -- advantages ----------------------------------------------------------------------------


def test_group_advantages_bessel_std_and_eps():
    rewards = [1.0, 2.0, 4.0, 7.0]
    adv = compute_advantages(rewards, 4).values
    mean = statistics.fmean(rewards)
    std = statistics.stdev(rewards)  # Bessel-corrected
    assert adv == pytest.approx([(r - mean) / (std + STD_EPS) for r in rewards])
    assert STD_EPS == 1e-4
    # By hand: mean 3.5, sample std sqrt(21/3) = 2.6458.
    assert adv[0] == pytest.approx(-2.5 / (math.sqrt(7.0) + 1e-4))


def test_zero_variance_group_gives_zero_and_is_counted():
    adv = compute_advantages([0.3, 0.3, 0.3, 1.0, 0.0, 0.0], 3)
    assert adv.values[:3] == [0.0, 0.0, 0.0]
    assert adv.values[3] > 0 > adv.values[4]
    assert adv.zero_variance_fraction == pytest.approx(0.5)


def test_unscaled_advantages_are_centred_rewards():
    adv = compute_advantages([1.0, 3.0, 10.0, 20.0], 2, scale=False).values
    assert adv == pytest.approx([-1.0, 1.0, -5.0, 5.0])


def test_group_size_must_divide_the_rewards():
    with pytest.raises(ValueError, match="do not split into groups of 3"):
        compute_advantages([1.0, 2.0, 3.0, 4.0], 3)


def test_shared_head_logprobs_and_gradients_match_the_plain_forward(tiny_156k):
    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import (
        TrainerSettings,
        make_trainer,
        sequence_logprobs,
    )
    from agentrft.config_model import validate_config

    # In float64. The two paths add the rows' gradients of the shared head at different
    # points: the plain forward sums them after every layer's backward, the shared head
    # before. Llama's RMSNorm computes in float32 even in a float64 model, so each path rounds
    # its (differently summed) gradient to float32 there: an error of a few float32 units
    # (u = 2^-24) of the gradient's scale, the same on every CPU, while float64 summation
    # order (~1e-16) is what AVX2 vs AVX-512 and thread counts change. Hence the bound below:
    # |a - b| <= 32 u max|b| per tensor (2 layers x ~4 float32 roundings x a 4x margin;
    # measured up to ~0.7 u). Elementwise relative tolerances cannot hold for tiny elements.
    config = validate_config(dict(lora_rank=4, lora_alpha=8, local={"dtype": "float64"}))
    trainer = make_trainer(
        TrainerSettings.of(config, device="cpu"), tiny_156k, max_completion_length=8
    )
    assert all(p.dtype == torch.float64 for p in trainer.model.parameters())
    with torch.no_grad():  # a non-zero LoRA, so its gradients are non-trivial
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    head = list(range(10, 40))  # 30 shared tokens, one of them trained
    batch = [
        TrainSequence([*head, 5, 6, 7, 8], [0] * 20 + [1] + [0] * 9 + [1, 1, 0, 1]),
        TrainSequence([*head, 9, 3], [0] * 20 + [1] + [0] * 9 + [1, 1]),
        TrainSequence([*head, 4, 4, 4, 4, 4, 4], [0] * 20 + [1] + [0] * 9 + [0, 1, 1, 1, 1, 1]),
    ]
    results = []
    for share in (True, False):
        trainer.model.zero_grad()
        logp, mask = sequence_logprobs(trainer.model, batch, 0.8, 0, share_prefix=share)
        assert logp.dtype == torch.float64
        (logp * mask * torch.arange(1, mask.shape[1] + 1)).sum().backward()
        grads = {
            n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None
        }
        results.append((logp.detach(), grads))
    (lp_a, g_a), (lp_b, g_b) = results
    # The forward is the same arithmetic row by row: equal to float64 rounding.
    torch.testing.assert_close(lp_a, lp_b, rtol=1e-10, atol=1e-12)
    assert g_a.keys() == g_b.keys() and g_a
    unit = 2.0**-24
    for name in g_a:
        scale = float(g_b[name].abs().max())
        assert scale > 0, name
        assert float((g_a[name] - g_b[name]).abs().max()) <= 32 * unit * scale, name


def test_trainer_step_with_kl_reports_it_and_moves_the_adapter(tiny_156k):
    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.backends.local.algo.trainer_settings import TrainerSettings
    from agentrft.config_model import validate_config

    config = validate_config(
        dict(lora_rank=4, lora_alpha=8, learning_rate=1e-2, local={"kl_beta": 0.1})
    )
    trainer = make_trainer(
        TrainerSettings.of(config, device="cpu"), tiny_156k, max_completion_length=8
    )
    seqs = [
        TrainSequence([*range(10, 30), 5, 6, 7], [0] * 20 + [1, 1, 1], advantage=1.0),
        TrainSequence([*range(10, 30), 8, 9], [0] * 20 + [1, 1], advantage=-1.0),
    ]
    first = trainer.step(seqs)
    assert first["kl"] == pytest.approx(0.0, abs=1e-7)  # the untouched LoRA is the reference
    assert first["grad_norm"] > 0
    second = trainer.step(seqs)
    assert second["kl"] > 0  # one update later the policy has moved away from the reference


def test_kl_reference_is_the_policy_rl_starts_from(tiny_156k):
    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.backends.local.algo.trainer_settings import TrainerSettings
    from agentrft.config_model import validate_config

    config = validate_config(
        dict(lora_rank=4, lora_alpha=8, learning_rate=1e-2, local={"kl_beta": 0.1})
    )
    trainer = make_trainer(
        TrainerSettings.of(config, device="cpu"), tiny_156k, max_completion_length=8
    )
    with torch.no_grad():  # a "warmed-up" adapter: far from the base model
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.2)
    seqs = [
        TrainSequence([*range(10, 30), 5, 6, 7], [0] * 20 + [1, 1, 1], advantage=1.0),
        TrainSequence([*range(10, 30), 8, 9], [0] * 20 + [1, 1], advantage=-1.0),
    ]
    before = [p.detach().clone() for p in trainer.params]
    assert trainer.step(seqs)["kl"] > 1e-4  # no reference set: the KL is to the base model
    with torch.no_grad():
        for p, b in zip(trainer.params, before, strict=True):
            p.copy_(b)
    trainer.set_reference()
    first = trainer.step(seqs)
    assert first["kl"] == pytest.approx(0.0, abs=1e-7)  # the reference is where RL started
    # The swap for the reference pass leaves the trained weights in place.
    assert any(not torch.equal(p, b) for p, b in zip(trainer.params, before, strict=True))
    assert trainer.step(seqs)["kl"] > 0


def test_per_token_advantages_give_minus_a_t_m_over_n():
    logp = _logprobs()
    per_token = torch.arange(18, dtype=torch.float32).reshape(3, 6) / 10 - 0.8
    scale = StepScale(tokens=int(MASK.sum()), sequences=3, max_completion_length=MAX_LEN)
    out = policy_loss(LossInputs(logp, logp.detach(), per_token, MASK), LossSettings(), scale)
    out.loss.backward()
    torch.testing.assert_close(logp.grad, -per_token * MASK / MASK.sum(), rtol=1e-6, atol=1e-8)
    # A (B, T) tensor equal in every column is the same as the (B,) advantage.
    logp2 = logp.detach().clone().requires_grad_(True)
    flat = ADV.unsqueeze(-1).expand(3, 6).contiguous()
    _, grad_flat = _grad(LossSettings(), logp2, logp2.detach(), adv=flat)
    _, grad_vec = _grad(LossSettings(), _logprobs(), _logprobs().detach())
    torch.testing.assert_close(grad_flat, grad_vec)


def test_turn_penalty_credit_is_centred_per_group_and_blames_the_faulty_turn():
    from agentrft.backends.local.algo.advantages import turn_penalty_credit

    faults = [[True, False], [False], [False, False, False], [False]]
    credit = turn_penalty_credit(faults, group_size=2, weight=0.5)
    # Group 1: 3 turns, 1 faulty -> mean c = -1/3; faulty turn 0.5*(-1+1/3), others +1/6.
    assert credit[0] == pytest.approx([0.5 * (-2 / 3), 0.5 / 3])
    assert credit[1] == pytest.approx([0.5 / 3])
    assert sum(credit[0]) + sum(credit[1]) == pytest.approx(0.0)  # centred
    assert credit[2] == [0.0, 0.0, 0.0] and credit[3] == [0.0]  # no fault, no signal
    with pytest.raises(ValueError, match="groups of 3"):
        turn_penalty_credit(faults, group_size=3, weight=0.5)


def test_turn_credit_lands_on_its_turns_tokens():
    from agentrft.backends.local.algo.sequences import trajectory_sequences
    from agentrft.messages import Message
    from agentrft.trajectory import Trajectory, Turn

    a = Message(role="assistant", content="x")
    turns = [
        Turn(index=0, assistant=a, prompt_token_ids=[1, 2], completion_token_ids=[3, 4]),
        Turn(index=1, assistant=a, prompt_token_ids=[1, 2, 3, 4, 5], completion_token_ids=[6]),
    ]
    traj = Trajectory(id="t", task="t", prompt="p", turns=turns)
    (seq,) = trajectory_sequences(traj, 1.0, [-0.25, 0.5])
    assert seq.token_ids == [1, 2, 3, 4, 5, 6] and seq.mask == [0, 0, 1, 1, 0, 1]
    assert seq.token_advantages == [0.0, 0.0, 0.75, 0.75, 0.0, 1.5]
    (plain,) = trajectory_sequences(traj, 1.0)
    assert plain.token_advantages is None and plain.advantage == 1.0


def test_trainer_per_token_advantages_align_with_the_tokens_they_score(tiny_156k):
    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.backends.local.algo.trainer_settings import TrainerSettings
    from agentrft.config_model import validate_config

    config = validate_config(
        dict(lora_rank=4, lora_alpha=8, learning_rate=1e-2, local={"dtype": "float64"})
    )
    ids = [*range(10, 30), 5, 6, 7]
    mask = [0] * 20 + [1, 1, 1]

    def step(seq: TrainSequence) -> list[torch.Tensor]:
        trainer = make_trainer(
            TrainerSettings.of(config, device="cpu"), tiny_156k, max_completion_length=8
        )
        trainer.step([seq, TrainSequence([*range(10, 30), 8, 9], [0] * 20 + [1, 1], -1.0)])
        return [p.detach().clone() for p in trainer.params]

    scalar = step(TrainSequence(ids, mask, advantage=1.0))
    same = step(TrainSequence(ids, mask, advantage=0.0, token_advantages=[1.0] * len(ids)))
    for a, b in zip(scalar, same, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    # Advantages on untrained positions (the prompt) change nothing; on a trained one, they do.
    prompt_only = step(TrainSequence(ids, mask, 1.0, token_advantages=[9.0] * 20 + [1.0] * 3))
    for a, b in zip(scalar, prompt_only, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    moved = step(TrainSequence(ids, mask, 1.0, token_advantages=[1.0] * 22 + [-3.0]))
    assert any(not torch.allclose(a, b) for a, b in zip(scalar, moved, strict=True))
