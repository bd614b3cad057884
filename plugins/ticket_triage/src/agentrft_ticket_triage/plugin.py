"""Entry point of the `agentrft-ticket-triage` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_ticket_triage.task import TicketTriageTask


@hookimpl
def agentrft_tasks() -> list[type]:
    return [TicketTriageTask]
