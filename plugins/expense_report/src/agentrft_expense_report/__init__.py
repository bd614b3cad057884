"""agentrft task plugin: file a travel expense report under a company policy."""

from agentrft_expense_report.environment import ExpenseReportEnv, Grade
from agentrft_expense_report.expert import expert_policy
from agentrft_expense_report.generator import DIFFICULTIES, generate_trip
from agentrft_expense_report.reward import TIERS, expense_reward, score
from agentrft_expense_report.task import ExpenseInstance, ExpenseReportTask

__all__ = [
    "DIFFICULTIES",
    "TIERS",
    "ExpenseInstance",
    "ExpenseReportEnv",
    "ExpenseReportTask",
    "Grade",
    "expense_reward",
    "expert_policy",
    "generate_trip",
    "score",
]
