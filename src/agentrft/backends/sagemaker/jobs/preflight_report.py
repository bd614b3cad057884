"""A preflight's findings: one `Check` per question, the report that renders them as a
table and refuses a submission when one failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentrft.backends.sagemaker.jobs.aws import SageMakerError

if TYPE_CHECKING:
    from rich.console import Console

    from agentrft.backends.sagemaker.jobs.aws import Aws

Status = Literal["ok", "fail", "warn", "skip"]
Purpose = Literal["train", "eval", "deploy", "doctor"]

_MARK = {"ok": "[green]✓[/]", "fail": "[red]✗[/]", "warn": "[yellow]![/]", "skip": "[dim]–[/]"}


@dataclass
class Check:
    name: str
    status: Status
    detail: str = ""
    fix: str = ""


@dataclass
class PreflightReport:
    checks: list[Check] = field(default_factory=list)
    #: Text blocks (policies to paste) printed after the table.
    appendix: list[str] = field(default_factory=list)
    aws: Aws | None = None
    #: The runtime's execution role, as GetAgentRuntime reported it.
    runtime_role_arn: str | None = None

    @property
    def ok(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    def add(self, name: str, status: Status, detail: str = "", fix: str = "") -> Check:
        check = Check(name, status, detail, fix)
        self.checks.append(check)
        return check

    def render(self, console: Console, title: str = "SageMaker preflight") -> None:
        from rich.table import Table

        table = Table(title=title, show_lines=False)
        table.add_column("", width=1)
        table.add_column("check")
        table.add_column("result", overflow="fold")
        table.add_column("fix", overflow="fold")
        for c in self.checks:
            table.add_row(_MARK[c.status], c.name, c.detail, c.fix)
        console.print(table)
        for block in self.appendix:
            console.out(block, highlight=False)

    def raise_for_failures(self) -> None:
        if not self.ok:
            lines = [f"- {c.name}: {c.detail}. Fix: {c.fix}" for c in self.failures]
            raise SageMakerError(
                "preflight failed (nothing was submitted):\n"
                + "\n".join(lines)
                + "\nRerun `agentrft doctor --backend sagemaker` after fixing, or pass "
                "--set sagemaker.preflight=false to submit anyway."
            )
