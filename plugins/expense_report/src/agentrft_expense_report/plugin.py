"""Entry point of the `agentrft-expense-report` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_expense_report.judged import ExpenseReportJudgedTask
from agentrft_expense_report.task import ExpenseReportTask


@hookimpl
def agentrft_tasks() -> list[type]:
    # The judged variant is its own task, so `--task expense_report_judged` picks it.
    return [ExpenseReportTask, ExpenseReportJudgedTask]
