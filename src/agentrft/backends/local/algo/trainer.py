"""The policy update: transformers + PEFT LoRA + AdamW, gradient accumulation, own logprobs.

The trainer recomputes every token's logprob itself (at the sampling temperature) rather
than trusting the sampler's numbers; the sampler's are kept only to report the mismatch.
Loss masks = completion mask x assistant-token mask: only ids the policy sampled train.
"""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft.backends.local.algo.flops import ModelShape, segment_context
from agentrft.backends.local.algo.loss import LossInputs, LossSettings, StepScale, policy_loss
from agentrft.backends.local.algo.sequences import TrainSequence
from agentrft.backends.local.algo.shared_prefix import (
    SharedPrefix,
    common_len,
    decoder_and_head,
    head_length,
    hidden_with_shared_head,
    step_head_length,
)
from agentrft.backends.local.algo.trainer_settings import TrainerSettings
from agentrft.backends.local.models.model_loading import load_model_and_tokenizer

if TYPE_CHECKING:
    pass


def sequence_logprobs(
    model: Any,
    batch: list[TrainSequence],
    temperature: float,
    pad_id: int,
    *,
    share_prefix: bool = True,
    prefix: SharedPrefix | None = None,
):
    """Logprob of each next token, (B, T-1), for right-padded `batch`; and the (B, T-1) mask.

    Positions outside the mask get logprob 0 (they are never trained). With `share_prefix`,
    a head of tokens common to every sequence (the system prompt, the tools, the first user
    turn: most of a short multi-turn episode) runs through the model once, with gradients.
    `prefix`, a head common to the whole step and already run (`SharedPrefix`), is read
    from its outputs instead of being run again for this micro-batch.
    """
    import torch

    device = next(model.parameters()).device
    width = max(len(s.token_ids) for s in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.float32)
    for i, s in enumerate(batch):
        n = len(s.token_ids)
        ids[i, :n] = torch.tensor(s.token_ids)
        attn[i, :n] = 1
        mask[i, :n] = torch.tensor(s.mask, dtype=torch.float32)
    ids, attn, mask = ids.to(device), attn.to(device), mask.to(device)
    targets = ids[:, 1:]
    shifted = mask[:, 1:]
    # Logprobs in at least float32 (bf16 logits lose the small differences GRPO trains on),
    # and in the model's own dtype when it is wider (float64 for numeric identity tests).
    work_dtype = torch.promote_types(next(model.parameters()).dtype, torch.float32)
    logp = torch.zeros(targets.shape, dtype=work_dtype, device=device)
    heads = decoder_and_head(model)
    if heads is None:  # an architecture without the usual `.model` / `.lm_head` split
        logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1, :].to(work_dtype)
        sel = torch.ones_like(shifted, dtype=torch.bool)
    else:
        # Project to the vocabulary only where a token is trained: prompts and tool replies
        # are most of a multi-turn sequence, and the (tokens x vocab) logits its biggest tensor.
        decoder, head = heads
        shared = head_length(batch, prefix.length if prefix is not None else 0, share_prefix)
        if shared:
            hidden = hidden_with_shared_head(decoder, ids, attn, shared, prefix)
        else:
            hidden = decoder(input_ids=ids, attention_mask=attn).last_hidden_state[:, :-1, :]
        sel = shifted > 0
        logits = head(hidden[sel]).to(work_dtype)
    if temperature > 0:
        logits = logits / temperature
    picked = logits.gather(-1, targets[sel].unsqueeze(-1)).squeeze(-1)
    logp[sel] = picked - torch.logsumexp(logits, dim=-1)
    return logp, shifted


def _behaviour(batch: list[TrainSequence], logp: Any) -> Any:
    """The behaviour policy's logprobs for `logp`'s positions: the sampler's where the
    sequence carries them, else the current policy's (a ratio of 1)."""
    import torch

    old = logp.detach().clone()
    for i, s in enumerate(batch):
        if len(s.sampler_logprobs) == len(s.token_ids):
            sl = torch.tensor(s.sampler_logprobs[1:], device=logp.device, dtype=old.dtype)
            mask = torch.tensor(s.mask[1:], device=logp.device, dtype=torch.bool)
            n = min(len(sl), old.shape[1])
            old[i, :n] = torch.where(mask[:n], sl[:n], old[i, :n])
    return old


def _advantages(batch: list[TrainSequence], logp: Any) -> Any:
    """(B,) per-sequence advantages, or (B, T-1) aligned with `logp` when any sequence
    carries per-token ones (position j of `logp` scores token j+1)."""
    import torch

    if all(s.token_advantages is None for s in batch):
        return torch.tensor([s.advantage for s in batch], device=logp.device, dtype=logp.dtype)
    adv = torch.zeros(logp.shape, device=logp.device, dtype=logp.dtype)
    for i, s in enumerate(batch):
        per_token = s.token_advantages or [s.advantage] * len(s.token_ids)
        adv[i, : len(per_token) - 1] = torch.tensor(per_token[1:], dtype=logp.dtype)
    return adv


def micro_batches(
    sequences: list[TrainSequence], size: int, shared: int = 0
) -> list[list[TrainSequence]]:
    """`sequences` in micro-batches of at most `size`, sequences that share a prefix side by
    side, and no micro-batch padded far beyond what its rows hold.

    Sorted by their token ids, a GRPO group's rollouts (same system prompt, tools, user turn,
    and often the same first call and tool reply) land in the same micro-batch, whose shared
    head then runs once: on a short workflow most of every sequence. A sequence joins the
    micro-batch being filled only when that costs no more tokens than running it on its own
    (a micro-batch runs its common head once and every row padded to the longest tail), so a
    rollout that went on for extra turns does not pad its whole group to its length.
    `shared` tokens at the start (the step's prefix, run once for all) cost nothing here.
    The loss normalisations do not depend on how a step is split (dapo: one global token
    count), so only speed does.
    """
    order = sorted(range(len(sequences)), key=lambda i: sequences[i].token_ids)

    def cost(batch: list[TrainSequence]) -> int:
        common = common_len(batch) if len(batch) > 1 else len(batch[0].token_ids) - 1
        longest = max(len(s.token_ids) for s in batch)
        return max(0, common - shared) + len(batch) * (longest - common)

    batches: list[list[TrainSequence]] = []
    current: list[TrainSequence] = []
    for i in order:
        seq = sequences[i]
        if current and len(current) < size:
            alone = max(1, len(seq.token_ids) - shared)
            if cost([*current, seq]) <= cost(current) + alone:
                current.append(seq)
                continue
        if current:
            batches.append(current)
        current = [seq]
    if current:
        batches.append(current)
    return batches


class LoRATrainer:
    """A PEFT LoRA policy with its AdamW optimizer; `step()` is one optimizer step.

    `model_path` is a model directory, hub id or `.gguf` file (models/model_loading.py);
    `device` a resolved one (`cpu`, `cuda`, `cuda:1`; `devices.resolve_device("auto")`
    picks), `dtype` `auto` (bf16 on a GPU, fp32 on CPU) or a torch dtype's name;
    `adapter_path` continues training a saved adapter instead of a fresh one. A run builds
    it from its spec's `TrainerSettings` (`make_trainer`).
    """

    def __init__(
        self,
        model_path: str,
        *,
        lora_rank: int = 32,
        lora_alpha: int = 64,
        target_modules: list[str] | str = "all-linear",
        lora_dropout: float = 0.0,
        learning_rate: float = 4e-5,
        adam_betas: tuple[float, float] = (0.9, 0.999),
        weight_decay: float = 0.0,
        max_grad_norm: float = 1.0,
        micro_batch_size: int = 8,
        temperature: float = 1.0,
        loss: LossSettings | None = None,
        max_completion_length: int = 1024,
        device: str = "cpu",
        dtype: str = "auto",
        adapter_path: str | None = None,
        seed: int = 0,
    ) -> None:
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model

        torch.manual_seed(seed)
        self.device = device
        base, self.tokenizer = load_model_and_tokenizer(model_path, device=self.device, dtype=dtype)
        # peft calls a transformers API deprecated in 5.x; the warning is noise to users.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
        if adapter_path:
            self.model = PeftModel.from_pretrained(base, adapter_path, is_trainable=True)
        else:
            lora = LoraConfig(
                r=lora_rank,
                lora_alpha=lora_alpha,
                target_modules=target_modules,
                lora_dropout=lora_dropout,
                bias="none",
                task_type="CAUSAL_LM",
            )
            self.model = get_peft_model(base, lora)
        self.model.train()
        # The LoRA matrices: fixed once the model is built (resume loads into them in place).
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=learning_rate, betas=adam_betas, weight_decay=weight_decay
        )
        self.max_grad_norm = max_grad_norm
        self.micro_batch_size = micro_batch_size
        self.temperature = temperature
        self.loss = loss or LossSettings()
        self.max_completion_length = max_completion_length
        self.pad_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )
        self.steps_done = 0
        self._shape: ModelShape | None = None
        # The KL reference: the LoRA weights RL started from (see `set_reference`); None
        # means the bare base model.
        self.reference: list[Any] | None = None

    @property
    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.params)

    def step(self, sequences: list[TrainSequence], *, off_policy: bool = False) -> dict[str, float]:
        """One optimizer step over `sequences` (micro-batched); returns metrics.

        `off_policy`: the sequences may come from an older adapter (`max_steps_off_policy`),
        so the loss's ratio is taken against the sampler's own logprobs (where a sequence
        has them) instead of the current policy's, and clipped as the loss clips any ratio.
        """
        import torch

        trained = [s for s in sequences if any(s.mask)]
        metrics: dict[str, float] = {"loss": 0.0, "sequences": float(len(trained))}
        if not trained:
            metrics["skipped"] = 1.0
            return metrics
        scale = StepScale(
            tokens=sum(sum(s.mask) for s in trained),
            sequences=len(trained),
            max_completion_length=self.max_completion_length,
        )
        batches = micro_batches(trained, self.micro_batch_size, self._prefix_length(trained))
        # Reference logprobs first, for every micro-batch: they swap the LoRA weights in
        # place, which must not happen between a forward and its backward.
        reference = self._reference_logprobs(batches) if self.loss.kl_beta > 0 else None
        self.optimizer.zero_grad(set_to_none=True)
        prefix = self._step_prefix(trained, batches)
        mismatch, mismatch_n = 0.0, 0
        for b, batch in enumerate(batches):
            logp, mask = sequence_logprobs(
                self.model, batch, self.temperature, self.pad_id, prefix=prefix
            )
            adv = _advantages(batch, logp)
            ref = reference[b] if reference else None
            out = policy_loss(
                LossInputs(
                    logprobs=logp,
                    # One update per batch: on-policy unless the batch is older.
                    old_logprobs=_behaviour(batch, logp) if off_policy else logp.detach(),
                    advantages=adv,
                    mask=mask,
                    ref_logprobs=ref,
                ),
                self.loss,
                scale,
            )
            out.loss.backward()
            metrics["loss"] += float(out.loss.detach())
            for k, v in out.metrics.items():
                metrics[k] = metrics.get(k, 0.0) + v
            with torch.no_grad():
                for i, s in enumerate(batch):
                    if len(s.sampler_logprobs) == len(s.token_ids):
                        sl = torch.tensor(s.sampler_logprobs[1:], device=logp.device)
                        m = mask[i, : len(sl)]
                        mismatch += float(((logp[i, : len(sl)] - sl).abs() * m).sum())
                        mismatch_n += int(m.sum())
        if prefix is not None:
            prefix.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps_done += 1
        metrics["grad_norm"] = float(grad_norm)
        metrics["trained_tokens"] = float(scale.tokens)
        tokens, forward = self.work(batches, prefix.length if prefix is not None else 0)
        # Forward + backward (about a forward again), and the reference's forward for KL.
        metrics["trainer/tokens"] = float(tokens)
        metrics["trainer/flops"] = forward * (3.0 if reference is not None else 2.0)
        if mismatch_n:
            metrics["sampler_logprob_abs_diff"] = mismatch / mismatch_n
        if not math.isfinite(metrics["loss"]):
            raise FloatingPointError(
                f"the loss is {metrics['loss']} at trainer step {self.steps_done}"
            )
        return metrics

    def _step_prefix(
        self, sequences: list[TrainSequence], batches: list[list[TrainSequence]]
    ) -> SharedPrefix | None:
        """The step's common head, run once, when more than one micro-batch shares it."""
        length = self._prefix_length(sequences)
        if len(batches) < 2 or not length or decoder_and_head(self.model) is None:
            return None
        decoder, _ = decoder_and_head(self.model)  # type: ignore[misc]
        device = next(self.model.parameters()).device
        return SharedPrefix(decoder, sequences[0].token_ids[:length], device)

    def work(self, batches: list[list[TrainSequence]], prefix: int) -> tuple[int, float]:
        """(positions run through the model, forward FLOPs) of one pass over `batches`,
        as `sequence_logprobs` runs them: the step prefix once, each micro-batch's head once,
        every row's tail padded to the longest (see flops.py for what is counted)."""
        shape = self._shape
        if shape is None:
            shape = self._shape = ModelShape.of(self.model)
        tokens = prefix
        flops = shape.forward(prefix, segment_context(0, prefix), 0)
        for batch in batches:
            shared = head_length(batch, prefix)
            start = prefix if prefix else 0
            rows, width = len(batch), max(len(s.token_ids) for s in batch) - shared
            trained = sum(sum(s.mask) for s in batch)
            segment = max(0, shared - start)
            tokens += segment + rows * width
            flops += shape.forward(segment, segment_context(start, segment), 0)
            flops += shape.forward(rows * width, rows * segment_context(shared, width), trained)
        return tokens, flops

    @staticmethod
    def _prefix_length(sequences: list[TrainSequence]) -> int:
        """Tokens every sequence of the step shares (0 when too few to be worth a pass)."""
        return step_head_length(sequences)

    def set_reference(self) -> None:
        """Freeze the current adapter as the KL reference: the policy RL starts from (after
        a warm-up, the warmed-up policy; a KL to the random or generic base would pull the
        policy away from the tool-call format the warm-up taught)."""
        self.reference = [p.detach().clone() for p in self.params]

    def _reference_logprobs(self, batches: list[list[TrainSequence]]) -> list[Any]:
        import torch

        sequences = [s for b in batches for s in b]

        def run() -> list[Any]:
            prefix = self._step_prefix(sequences, batches)  # no_grad: plain tensors
            return [
                sequence_logprobs(self.model, b, self.temperature, self.pad_id, prefix=prefix)[0]
                for b in batches
            ]

        if self.reference is None:
            with torch.no_grad(), self.model.disable_adapter():
                return run()
        with torch.no_grad():
            current = [p.detach().clone() for p in self.params]
            for p, r in zip(self.params, self.reference, strict=True):
                p.copy_(r)
            try:
                return run()
            finally:
                for p, c in zip(self.params, current, strict=True):
                    p.copy_(c)

    def token_logprob(self, prompt_ids: list[int], token_id: int, temperature: float) -> float:
        """The current policy's logprob of `token_id` after `prompt_ids` (the sync probe)."""
        import torch

        seq = TrainSequence([*prompt_ids, token_id], [0] * len(prompt_ids) + [1])
        with torch.no_grad():
            logp, _ = sequence_logprobs(self.model, [seq], temperature, self.pad_id)
        return float(logp[0, -1])

    def sft_step(self, sequences: list[TrainSequence]) -> dict[str, float]:
        """One supervised step: mean NLL of the masked tokens (temperature 1)."""
        import torch

        tokens = sum(sum(s.mask) for s in sequences)
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for batch in micro_batches(sequences, self.micro_batch_size):
            logp, mask = sequence_logprobs(self.model, batch, 1.0, self.pad_id)
            loss = -(logp * mask).sum() / max(tokens, 1)
            loss.backward()
            total += float(loss.detach())
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return {"sft_loss": total, "grad_norm": float(grad_norm), "trained_tokens": float(tokens)}

    def reset_optimizer(self, learning_rate: float | None = None) -> None:
        """Fresh AdamW moments (after the SFT warm-up), optionally at a new learning rate."""
        import torch

        group = self.optimizer.param_groups[0]
        self.optimizer = torch.optim.AdamW(
            self.params,
            lr=learning_rate if learning_rate is not None else group["lr"],
            betas=group["betas"],
            weight_decay=group["weight_decay"],
        )

    def set_learning_rate(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    # -- persistence --------------------------------------------------------------------

    def save_adapter(self, path: str | Path) -> Path:
        path = Path(path)
        self.model.save_pretrained(str(path))
        return path

    def save_state(self, path: str | Path) -> None:
        """Adapter + optimizer + RNG states (for exact resume)."""
        import torch

        path = Path(path)
        self.save_adapter(path / "adapter")
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "steps_done": self.steps_done,
                "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
                "reference": self.reference,
            },
            path / "trainer_state.pt",
        )

    def load_state(self, path: str | Path) -> None:
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        path = Path(path)
        weights = load_file(str(path / "adapter" / "adapter_model.safetensors"))
        set_peft_model_state_dict(self.model, weights)
        state = torch.load(path / "trainer_state.pt", weights_only=False)
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps_done = int(state["steps_done"])
        self.reference = state.get("reference")
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])


def make_trainer(
    settings: TrainerSettings,
    model_path: str,
    *,
    max_completion_length: int,
    adapter: str | None = None,
) -> LoRATrainer:
    """The `LoRATrainer` `settings` describe, on `model_path`; `adapter` continues training
    a saved LoRA adapter instead of a fresh one."""
    return LoRATrainer(
        model_path,
        lora_rank=settings.lora_rank,
        lora_alpha=settings.lora_alpha,
        target_modules=settings.target_modules,
        lora_dropout=settings.lora_dropout,
        learning_rate=settings.learning_rate,
        adam_betas=settings.adam_betas,
        weight_decay=settings.weight_decay,
        max_grad_norm=settings.max_grad_norm,
        micro_batch_size=settings.micro_batch_size,
        temperature=settings.temperature,
        loss=settings.loss,
        max_completion_length=max_completion_length,
        device=settings.device,
        dtype=settings.dtype,
        adapter_path=adapter,
        seed=settings.seed,
    )
