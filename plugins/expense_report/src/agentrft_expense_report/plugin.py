"""Entry point of the `agentrft-expense-report` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_expense_report.task import ExpenseReportTask


@hookimpl
def agentrft_tasks() -> list[type]:
    return [ExpenseReportTask]
