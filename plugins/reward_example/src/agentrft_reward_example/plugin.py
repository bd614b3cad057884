"""Entry point of `agentrft-reward-example` (group `agentrft`)."""

from typing import Any

from agentrft import hookimpl
from agentrft_reward_example.strict import STRICT_REWARD


@hookimpl
def agentrft_rewards() -> dict[str, Any]:
    # The key is the name users pass to --reward.
    return {"expense_report_strict": STRICT_REWARD}
