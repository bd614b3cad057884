"""The weight-sync probe (`local.sync_check`): does the sampler serve the weights the
trainer just wrote?

Before the optimizer step one seeded token is sampled from a rollout's first prompt; after
the sync the same token is scored by the sampler (new adapter) and by the trainer. When the
trainer's logprob moved and the sampler's did not (to float32 noise), the sampler is stale:
`analysis/sync_stale` is 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrft.backends.local.inference.sampler import TokenSampler
from agentrft.policy import Sampling
from agentrft.trajectory import Trajectory

__all__ = ["SyncProbe"]

#: The trainer moved the probe token's logprob by at least this much, yet the sampler's
#: logprob stayed put (to float32 noise): the sampler is not serving the new weights.
PROBE_MOVED = 1e-3
PROBE_STILL = 1e-6


@dataclass(frozen=True)
class SyncProbe:
    """One prompt's probe token, sampled and scored around a weight sync."""

    prompt: list[int]
    sampler: TokenSampler
    trainer: Any  # a LoRATrainer: `token_logprob(prompt, token, temperature)`
    sampling: Sampling
    seed: int

    @classmethod
    def of(
        cls,
        trajs: list[Trajectory],
        sampler: TokenSampler,
        trainer: Any,
        sampling: Sampling,
        seed: int,
    ) -> SyncProbe | None:
        """A probe on the first turn of `trajs` that kept its prompt ids, or None."""
        for t in trajs:
            for turn in t.turns:
                if turn.prompt_token_ids:
                    return cls(list(turn.prompt_token_ids), sampler, trainer, sampling, seed)
        return None

    async def sample(self, adapter: str | None) -> tuple[int, float] | None:
        """(token, logprob) of one seeded sample from `adapter`, or None."""
        sampling = Sampling(temperature=self.sampling.temperature, max_tokens=1, seed=self.seed)
        gen = await self.sampler.generate(self.prompt, sampling, adapter=adapter)
        if not gen.token_ids or not gen.logprobs:
            return None
        return gen.token_ids[0], gen.logprobs[0]

    async def compare(self, before: tuple[int, float], adapter: str | None) -> dict[str, float]:
        """Score the probe token again after the sync, with the sampler (`adapter`, the new
        version) and the trainer."""
        token, lp_before = before
        after = await self.sample(adapter)
        if after is None or after[0] != token:
            # Another token came out: the sampler's distribution changed, so it is not stale.
            return {"analysis/sync_stale": 0.0}
        lp_trainer = self.trainer.token_logprob(self.prompt, token, self.sampling.temperature)
        moved_trainer = abs(lp_trainer - lp_before)
        moved_sampler = abs(after[1] - lp_before)
        stale = moved_trainer >= PROBE_MOVED and moved_sampler < PROBE_STILL
        return {
            "analysis/sync_stale": float(stale),
            "analysis/sync_logprob_gap": abs(after[1] - lp_trainer),
            "analysis/probe_logprob_delta": moved_trainer,
        }
