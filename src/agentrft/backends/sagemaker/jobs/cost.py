"""Token-based cost: estimate a run before it starts, price a job after it ends.

The managed service bills per million tokens in three dimensions: prefill (input tokens,
re-read every turn), sampling (generated tokens, reasoning included) and training (tokens
in the LoRA backward pass). An estimate is rollouts x a per-rollout token profile x
prices; the profile comes from trajectories you recorded (local runs, `agentrft eval`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError

if TYPE_CHECKING:
    from agentrft.trajectory import Trajectory


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens.

    ASSUMPTION: AWS publishes the total of the launch run (≈ $339 for 491.6 M prefill,
    159.7 M sampled, 643.3 M training tokens, gpt-oss-20b, us-east-1), not this split. The
    defaults below are chosen so that run prices to ≈ $338; replace them with the prices
    on the SageMaker AI pricing page for your model and region (`--prices FILE`).
    """

    prefill: float = 0.10
    sampling: float = 0.40
    training: float = 0.35
    currency: str = "USD"
    source: str = "assumed defaults calibrated to the launch post's total (not AWS prices)"

    def cost(self, tokens: dict[str, float]) -> float:
        return (
            tokens.get("prefill", 0) * self.prefill
            + tokens.get("sampling", 0) * self.sampling
            + tokens.get("training", 0) * self.training
        ) / 1e6


def load_prices(path: str | Path | None = None, model: str | None = None) -> PriceTable:
    """The default table, or one read from a YAML/JSON file.

    File: `{prefill: 0.1, sampling: 0.4, training: 0.35}` (USD per million tokens), or
    `{models: {<hub model>: {...}}, default: {...}}` to price several models.
    """
    if path is None:
        return PriceTable()
    import yaml

    from agentrft.config import load_yaml, yaml_error_line

    p = Path(path)
    if not p.is_file():
        raise SageMakerError(f"price file {p} does not exist")
    try:
        # The config loader's bounds: no alias bomb, deep nesting or huge integer gets in.
        data = load_yaml(p.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise SageMakerError(f"price file {p} is not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise SageMakerError(f"price file {p} does not parse: {yaml_error_line(exc)}") from None
    if not isinstance(data, dict):
        raise SageMakerError(f"price file {p} must hold a mapping")
    if "models" in data:
        models = data.get("models") or {}
        entry = models.get(model) if model else None
        data = entry if entry is not None else data.get("default", {})
    allowed = {"prefill", "sampling", "training", "currency"}
    unknown = set(data) - allowed
    if unknown:
        raise SageMakerError(
            f"price file {p}: unknown keys {sorted(unknown)}; use prefill, sampling, training "
            "(USD per million tokens) and currency"
        )
    try:
        values = {k: float(data[k]) for k in ("prefill", "sampling", "training") if k in data}
    except (TypeError, ValueError):
        raise SageMakerError(f"price file {p}: prices must be numbers") from None
    if any(not math.isfinite(v) or v < 0 for v in values.values()):
        raise SageMakerError(f"price file {p}: prices must be finite and not negative")
    return PriceTable(**values, currency=str(data.get("currency", "USD")), source=f"price file {p}")


@dataclass(frozen=True)
class TokenProfile:
    """Mean tokens per rollout."""

    prefill: float
    sampling: float
    training: float
    rollouts_measured: int = 0
    source: str = ""

    def as_tokens(self) -> dict[str, float]:
        return {"prefill": self.prefill, "sampling": self.sampling, "training": self.training}


def profile_from_trajectories(trajectories: Iterable[Trajectory], source: str = "") -> TokenProfile:
    """Mean prefill/sampled/training tokens per rollout from recorded turns.

    prefill = sum of each turn's prompt tokens (the context is re-read every turn);
    sampled = sum of completion tokens; training = prefill + sampled, i.e. every turn is
    a training sequence. The launch post's numbers agree within 2%: 643.3 M training
    tokens over 102,400 trained rollouts is 6,282 per rollout, against 6,174 prefilled +
    sampled per rollout (491.6 M + 159.7 M over all 105,486).
    """
    n = 0
    prefill = sampled = 0
    for t in trajectories:
        n += 1
        prefill += sum(turn.prompt_tokens for turn in t.turns)
        sampled += sum(turn.completion_tokens for turn in t.turns)
    if n == 0:
        raise SageMakerError(f"no trajectories in {source or 'the input'}")
    if prefill == 0 and sampled == 0:
        raise SageMakerError(
            f"trajectories in {source or 'the input'} carry no token counts (turns' "
            "prompt_tokens/completion_tokens are 0); record them with a client that reports "
            "usage, or pass --prefill/--sampled per rollout"
        )
    return TokenProfile(
        prefill=prefill / n,
        sampling=sampled / n,
        training=(prefill + sampled) / n,
        rollouts_measured=n,
        source=source,
    )


def profile_from_files(paths: Iterable[str | Path]) -> TokenProfile:
    from agentrft.trajectory import TrajectoryFileError, read_trajectories

    files = [Path(p) for p in paths]
    for f in files:
        if not f.is_file():
            raise SageMakerError(f"trajectory file {f} does not exist")
    trajectories = (t for f in files for t in read_trajectories(f))
    try:
        return profile_from_trajectories(trajectories, ", ".join(map(str, paths)))
    except TrajectoryFileError as exc:  # it names the file and the line
        raise SageMakerError(str(exc)) from None


@dataclass(frozen=True)
class Estimate:
    training_rollouts: int
    validation_rollouts: int
    tokens: dict[str, float]
    cost: float
    prices: PriceTable
    profile: TokenProfile

    @property
    def rollouts(self) -> int:
        return self.training_rollouts + self.validation_rollouts

    def to_dict(self) -> dict[str, Any]:
        return {
            "rollouts": self.rollouts,
            "training_rollouts": self.training_rollouts,
            "validation_rollouts": self.validation_rollouts,
            "tokens": self.tokens,
            "cost": round(self.cost, 2),
            "currency": self.prices.currency,
            "prices": asdict(self.prices),
            "profile": asdict(self.profile),
        }


def estimate(
    *,
    max_steps: int,
    global_batch_size: int,
    group_size: int,
    profile: TokenProfile,
    prices: PriceTable | None = None,
    val_every: int = 0,
    validation_rows: int = 0,
) -> Estimate:
    """Cost of a run: steps x prompts per step x rollouts per prompt, plus validation.

    Validation rollouts (one per validation row every `val_every` steps, at temperature 0)
    are prefilled and sampled but not trained on.
    """
    prices = prices or PriceTable()
    train = max_steps * global_batch_size * group_size
    val = (max_steps // val_every) * validation_rows if val_every and validation_rows else 0
    tokens = {
        "prefill": (train + val) * profile.prefill,
        "sampling": (train + val) * profile.sampling,
        "training": train * profile.training,
    }
    return Estimate(train, val, tokens, prices.cost(tokens), prices, profile)


def job_cost(billed_tokens: dict[str, int], prices: PriceTable | None = None) -> float:
    """Billed tokens (DescribeJob's ServiceOutput.BillableTokenUsage) x prices."""
    return (prices or PriceTable()).cost({k: float(v) for k, v in billed_tokens.items()})


def launch_run_profile() -> TokenProfile:
    """The launch post's per-rollout profile (for `cost estimate --launch-profile`).

    Prefill and sampling are spread over all 105,486 rollouts; training over the
    100 x 128 x 8 = 102,400 trained ones (validation rollouts are not trained on), so an
    estimate with the run's settings reproduces its three token counts.
    """
    run = facts.LAUNCH_RUN
    n = run["rollouts"]
    trained = run["max_steps"] * 128 * 8
    return TokenProfile(
        prefill=run["prefill_tokens"] / n,
        sampling=run["sampling_tokens"] / n,
        training=run["training_tokens"] / trained,
        rollouts_measured=int(n),
        source="launch post: 100-step gpt-oss-20b Wordle run",
    )


def format_tokens(n: float) -> str:
    return f"{n / 1e6:,.1f} M" if n >= 1e5 else f"{n:,.0f}"
