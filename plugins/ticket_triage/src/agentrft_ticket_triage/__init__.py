"""agentrft task plugin: support-ticket triage (read a ticket, route it to the right team)."""

from agentrft_ticket_triage.task import TicketTriageTask, TriageEnv
from agentrft_ticket_triage.tickets import QUEUES, Ticket, make_tickets

__all__ = ["QUEUES", "Ticket", "TicketTriageTask", "TriageEnv", "make_tickets"]
