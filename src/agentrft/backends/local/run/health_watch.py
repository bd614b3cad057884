"""The health view of a run: `ConditionLog` turns the step-by-step findings (the threshold
rules of `health.HealthMonitor`, the `exploit_watch.ExploitWatch`) into conditions, so the
run says once when each starts and once when it clears, and sums them up at the end;
`HealthWatch` holds the three. With `local.health_stop_after=N` the run stops once the same
warning has fired N steps in a row (opt-in). See docs/health.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agentrft.backends.local.run.exploit_watch import ExploitWatch
from agentrft.backends.local.run.health import Finding, HealthMonitor
from agentrft.trajectory import Trajectory

#: A condition clears after this many steps in a row without its warning: one quiet step
#: between two that fire is noise around the threshold, not a recovery.
CLEAR_AFTER = 2


@dataclass
class Condition:
    """A stretch of steps during which one warning held (quiet gaps shorter than
    `CLEAR_AFTER` steps included)."""

    name: str
    start: int
    last: int
    fired: int = 1
    #: The warning as it read on its first step.
    first: str = ""
    cleared: int | None = None

    @property
    def span(self) -> str:
        return (
            f"step {self.start}" if self.start == self.last else f"steps {self.start}-{self.last}"
        )

    @property
    def gaps(self) -> str:
        """`, fired on 5 of 6` when it skipped steps within its span, else ""."""
        steps = self.last - self.start + 1
        return f", fired on {self.fired} of {steps}" if self.fired < steps else ""


@dataclass(frozen=True)
class HealthEvent:
    """A warning that started (`finding` says what it read) or cleared at `step`."""

    step: int
    name: str
    started: bool
    finding: Finding | None = None
    condition: Condition | None = None

    @property
    def line(self) -> str:
        if self.started and self.finding is not None:
            return f"step {self.step}: {self.finding.line}"
        c = self.condition
        held = f" (held {c.span}{c.gaps})" if c else ""
        return f"step {self.step}: {self.name} cleared{held}"


@dataclass
class ConditionLog:
    """Turns each step's findings into conditions: an event when one starts, one when it
    has been quiet for `clear_after` steps, and every condition for the summary."""

    clear_after: int = CLEAR_AFTER
    active: dict[str, Condition] = field(default_factory=dict)
    done: list[Condition] = field(default_factory=list)
    #: The first step seen (a resumed run starts past 1).
    first_step: int | None = None

    def update(
        self, step: int, findings: Sequence[Finding], implied: Iterable[str] = ()
    ) -> list[HealthEvent]:
        """The events of `step`; `implied` names warnings that hold without being warned
        about (a weaker rule under a stronger one): they keep an active condition going
        but start none."""
        if self.first_step is None:
            self.first_step = step
        events = []
        fired = {f.name: f for f in findings}
        holding = set(implied)
        for name, condition in list(self.active.items()):
            if name in fired or name in holding:
                condition.last, condition.fired = step, condition.fired + 1
            elif step - condition.last >= self.clear_after:
                condition.cleared = step
                self.done.append(self.active.pop(name))
                events.append(HealthEvent(step, name, started=False, condition=condition))
        for name, finding in fired.items():
            if name not in self.active:
                self.active[name] = Condition(name, step, step, first=finding.text)
                events.append(HealthEvent(step, name, started=True, finding=finding))
        return events

    def conditions(self) -> list[Condition]:
        """Every condition of the run, in the order they started."""
        return sorted([*self.done, *self.active.values()], key=lambda c: (c.start, c.name))

    def summary(self, last_step: int) -> list[str]:
        """A few lines: each condition, its steps, and whether it still held at the end."""
        conditions = self.conditions()
        first = self.first_step if self.first_step is not None else last_step
        run = f"step {last_step}" if first == last_step else f"steps {first}-{last_step}"
        if not conditions:
            return [f"health: no warning over {run}"]
        width = max(len(c.name) for c in conditions)
        lines = [f"health over {run}: {len(conditions)} conditions"]
        for c in conditions:
            end = "held at the end" if c.cleared is None else f"cleared at step {c.cleared}"
            n = c.last - c.start + 1
            count = f"{n} step{'s' if n > 1 else ''}{c.gaps}"
            lines.append(f"  {c.name:<{width}}  {c.span} ({count}; {end})")
        return lines


@dataclass(frozen=True)
class StepHealth:
    """What `HealthWatch.step` found: the threshold warnings of the step (as
    `HealthMonitor.check` gives them), every finding, and the start/clear events."""

    warnings: list[str]
    findings: list[Finding]
    events: list[HealthEvent]


@dataclass
class HealthWatch:
    """The health view of a run: the threshold rules, the exploit watch and the
    conditions they start and clear. `local.health_stop_after` counts the steps in a row
    any of them fired."""

    monitor: HealthMonitor = field(default_factory=HealthMonitor)
    exploits: ExploitWatch = field(default_factory=ExploitWatch)
    log: ConditionLog = field(default_factory=ConditionLog)

    def step(
        self, step: int, metrics: dict[str, float], rollouts: Sequence[Trajectory] = ()
    ) -> StepHealth:
        rules = self.monitor.findings(metrics)
        found = [*rules, *self.exploits.findings(step, metrics, rollouts)]
        self.monitor.count(f.name for f in found)
        implied = self.monitor.implied(metrics, (f.name for f in rules))
        events = self.log.update(step, found, implied)
        return StepHealth([f.line for f in rules], found, events)

    def stop_reason(self) -> str | None:
        return self.monitor.stop_reason()

    def summary(self, last_step: int) -> list[str]:
        return self.log.summary(last_step)
