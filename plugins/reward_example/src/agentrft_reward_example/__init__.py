"""Example reward plugin: `expense_report_strict`, an auditor's reward for expense_report."""

from agentrft_reward_example.strict import STRICT_REWARD, STRICT_TIERS, strict_reward

__all__ = ["STRICT_REWARD", "STRICT_TIERS", "strict_reward"]
