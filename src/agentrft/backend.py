"""`Backend`: where training and evaluation run. Backends are plugins (`local`, `sagemaker`).

A backend owns everything that is only its own (docs/write-a-backend.md):

- its config section: `config_section` is a `Section` model, found at `config.<name>`
  (the core `Config` gets one field per installed backend; unknown sections are refused);
- its CLI flags: `cli_options(command)` lists the flags it adds to `agentrft train` and
  `agentrft eval`, and `cli_values` turns their values into config keys and options;
- its typed options and results: `train(task, config, options)` takes its own
  `TrainOptions` subclass and returns a `TrainResult`; `evaluate` takes `EvalOptions` and
  returns an `EvalResult`, whose `reports` and `write_report` serve `eval --report FILE`.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, cast

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console

    from agentrft.config import Config
    from agentrft.evaluation import EvalReport
    from agentrft.policy import Policy
    from agentrft.rollout import RewardFn
    from agentrft.task import Task
    from agentrft.trajectory import Trajectory

Command = Literal["train", "eval", "play"]


class BackendUnavailable(RuntimeError):
    """The backend's optional dependencies are missing; the message names the extra."""


class BackendError(RuntimeError):
    """A backend failed in a way the user can fix (bad ARN, wrong region, missing role);
    the message names the input and the fix. The CLI prints it without a traceback."""


# -- options and results --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """What every backend's `train` gets besides the task and the config. A backend with
    options of its own subclasses it (`LocalTrainOptions` adds `resume`, ...)."""

    #: A `--reward` plugin replacing the task's reward (None: the task's own).
    reward_fn: RewardFn | None = None
    #: Show what would run and change nothing (no job, no run directory).
    dry_run: bool = False
    #: Where progress goes (None: the backend stays quiet or uses its own console).
    console: Console | None = None


@dataclass(frozen=True, kw_only=True)
class EvalOptions:
    """What every backend's `evaluate` gets besides the task and the config."""

    reward_fn: RewardFn | None = None
    dry_run: bool = False
    console: Console | None = None
    #: A directory for the backend's own evaluation outputs (None: it writes none).
    output_dir: str | None = None


def as_options(kind: type[Any], options: Any) -> Any:
    """`options` as `kind` (a backend's own options class): itself when it already is one,
    else `kind` with the fields of the core options given (None: `kind()`)."""
    if isinstance(options, kind):
        return options
    if options is None:
        return kind()
    return kind(**{f.name: getattr(options, f.name) for f in fields(options)})


@dataclass(kw_only=True)
class TrainResult:
    """What `train` returns. Subclasses add their fields (a run directory, a job ARN)."""

    def summary(self) -> dict[str, Any]:
        """The plain fields the CLI prints after a run, `name: value` per line."""
        return _plain_fields(self)


@dataclass(kw_only=True)
class EvalResult:
    """What `evaluate` returns: a report per evaluation run (policy x temperature), and the
    episodes when the backend keeps them (`eval --trajectories FILE`)."""

    reports: list[EvalReport] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)

    def to_report(self, context: dict[str, Any]) -> dict[str, Any]:
        """What `eval --report FILE` writes: `{**context, "reports": [...]}`."""
        return {**context, "reports": [r.to_dict() for r in self.reports]}

    def write_report(self, path: str | Path, context: dict[str, Any]) -> None:
        """Write `to_report(context)` as JSON, secrets scrubbed, complete or not at all."""
        from agentrft.evaluation import write_json

        write_json(path, self.to_report(context))

    def summary(self) -> dict[str, Any]:
        return _plain_fields(self)


def _plain_fields(result: Any) -> dict[str, Any]:
    if not is_dataclass(result):
        return {}
    out = {f.name: getattr(result, f.name) for f in fields(result)}
    return {k: v for k, v in out.items() if isinstance(v, (str, Path, int, float, bool))}


# -- CLI flags --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CliOption:
    """A flag a backend adds to `agentrft train` and/or `agentrft eval`.

    Its value either sets a config key (`key`: the config file, then the flag, then `--set`,
    so `config show` and the run agree) or fills a field of the backend's options
    (`option`). `Backend.cli_values` does the mapping; override it for anything more.
    """

    #: The value's name in `cli_values` (an identifier).
    name: str
    #: The flag and its second names, e.g. ("--role-arn",) or ("--wait/--no-wait",).
    flags: tuple[str, ...]
    help: str
    #: str, int, float, bool (a switch), Path, or list[str] (repeatable).
    type: Any = str
    default: Any = None
    key: str | None = None
    option: str | None = None
    #: For a switch: what the key or option gets when the switch is given (None: True).
    value: Any = None
    commands: tuple[Command, ...] = ("train", "eval")


class Backend(ABC):
    """A training/evaluation backend.

    Keep the module that defines a backend light: import torch, vLLM or the SageMaker SDK
    inside the methods, so `agentrft --help` stays fast.
    """

    name: ClassVar[str] = ""
    #: The pip extra that brings this backend's dependencies (`pip install agentrft[<extra>]`).
    extra: ClassVar[str] = ""
    #: Importable module names this backend needs.
    requires: ClassVar[tuple[str, ...]] = ()
    #: Its config section (a `agentrft.config.Section` model), at `config.<name>`.
    config_section: ClassVar[type[BaseModel] | None] = None
    #: The options `train` and `evaluate` take (subclasses of the core ones).
    train_options: ClassVar[type[TrainOptions]] = TrainOptions
    eval_options: ClassVar[type[EvalOptions]] = EvalOptions
    #: The config key the core `--model` flag sets for this backend (None: it takes none).
    model_key: ClassVar[str | None] = None
    #: Whether `evaluate` returns the episodes' trajectories (`eval --trajectories FILE`).
    keeps_trajectories: ClassVar[bool] = False
    #: The flags it adds to `train`/`eval`/`play` (each names its commands): what the
    #: default `cli_options` lists.
    cli_flags: ClassVar[tuple[CliOption, ...]] = ()

    def check_available(self) -> None:
        """Raise `BackendUnavailable` naming the extra when a dependency is missing."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable(
                f"backend {self.name!r} needs {', '.join(missing)}; install it with: "
                f"pip install 'agentrft[{self.extra or self.name}]'"
            )

    def check_config(self, config: Config) -> None:
        """Refuse settings this backend cannot run (a loss it has no function for, say)
        before anything starts; raise `ConfigError` naming the key and the fix. `train` and
        `evaluate` call it first thing (so a library caller is checked as the CLI's user
        is); the CLI calls it for the commands that reach neither (`config show`, `play`).
        The default accepts everything the config model accepted."""
        return None

    def effective_config(self, task: Task[Any, Any], config: Config) -> Config:
        """The config a run of `task` would really use, presets applied (what `agentrft
        config show --backend NAME` prints). The default: `config` itself."""
        return config

    def run_spec(self, task: Task[Any, Any], config: Config) -> dict[str, Any] | None:
        """What a training run of `task` would start from, resolved as the run resolves it
        (the settings each part receives), for `config show --spec`; nothing is run or
        written. None (the default): this backend resolves nothing ahead of its run."""
        return None

    def play_policy(self, task: Task[Any, Any], config: Config) -> Policy:
        """The model this backend trains, as a `Policy` for `agentrft play --backend NAME`
        (close it with `aclose()`). The default: this backend plays no episodes here."""
        raise BackendError(
            f"the {self.name} backend cannot play an episode here; use --policy (a served "
            "model's URL, litellm:PROVIDER/MODEL or expert)"
        )

    @classmethod
    def cli_options(cls, command: Command) -> list[CliOption]:
        """The flags this backend adds to `agentrft <command>` (train, eval or play)."""
        return [o for o in cls.cli_flags if command in o.commands]

    @classmethod
    def cli_values(
        cls, command: Command, values: dict[str, Any], extra_args: list[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(config values by dotted key, options fields) for one command line.

        `values` holds this backend's flags by `CliOption.name` (their defaults when not
        given) and `model`, the core `--model` flag; `extra_args` are stray words after the
        flags, refused here unless a backend gives them a meaning.
        """
        if extra_args:
            raise BackendError(f"unexpected argument {extra_args[0]!r}")
        config: dict[str, Any] = {}
        options: dict[str, Any] = {}
        model = values.get("model")
        if model is not None:
            if cls.model_key is None:
                raise BackendError(f"--model: the {cls.name} backend takes no model")
            config[cls.model_key] = model
        for opt in cls.cli_options(command):
            given = values.get(opt.name, opt.default)
            if given is None or given == opt.default:
                continue
            value = opt.value if opt.value is not None and given is True else given
            if opt.key is not None:
                config[opt.key] = value
            elif opt.option is not None:
                options[opt.option] = value
        return config, options

    @abstractmethod
    def train(
        self, task: Task[Any, Any], config: Config, options: TrainOptions | None = None
    ) -> TrainResult:
        """Run a training job for `task` with `config` (options: `self.train_options`)."""

    @abstractmethod
    def evaluate(
        self, task: Task[Any, Any], config: Config, options: EvalOptions | None = None
    ) -> EvalResult:
        """Evaluate a model on `task` (options: `self.eval_options`)."""


#: A backend's typed view of the config (`LocalRunConfig`, `SageMakerRunConfig`).
ViewT = TypeVar("ViewT", bound="Config")


def section_view(config: Config, name: str, section: type[BaseModel], view: type[ViewT]) -> ViewT:
    """`config` seen as `view`, a `Config` subclass that declares a backend's section
    `name: section`, after checking that `config` has that section (the same object:
    nothing is copied or re-validated). A backend types its own section this way; a config
    built without it (not through `agentrft.config_model`) is a `ConfigError`."""
    from agentrft.config import ConfigError

    if not isinstance(getattr(config, name, None), section):
        raise ConfigError(
            f"config: no `{name}` section; build the config with "
            "agentrft.config_model.load_config (it adds every installed backend's section)"
        )
    return cast(ViewT, config)
