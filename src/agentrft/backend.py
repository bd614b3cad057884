"""`Backend`: where training and evaluation run. Backends are plugins (`local`, `sagemaker`)."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from agentrft.config import Config
    from agentrft.task import Task


class BackendUnavailable(RuntimeError):
    """The backend's optional dependencies are missing; the message names the extra."""


class BackendError(RuntimeError):
    """A backend failed in a way the user can fix (bad ARN, wrong region, missing role);
    the message names the input and the fix. The CLI prints it without a traceback."""


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
        before anything starts; raise `ConfigError` naming the key and the fix. The default
        accepts everything the config model accepted."""
        return None

    @abstractmethod
    def train(self, task: Task[Any, Any], config: Config, **options: Any) -> Any:
        """Run a training job for `task` with `config`; return a backend-specific result."""

    @abstractmethod
    def evaluate(self, task: Task[Any, Any], config: Config, **options: Any) -> Any:
        """Evaluate a model on `task`; return an `EvalReport` or a list of them."""
