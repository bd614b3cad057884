"""The config a run reads: the core keys of `agentrft.config` plus one section per installed
backend (`Backend.config_section`, e.g. `local:`, `sagemaker:`).

The core schema knows no backend; this module, which sits above the plugin registry, puts
the installed backends' sections into it. Everything that reads a user's config file or
`--set` overrides comes through here, so `config.local` and `config.sagemaker` are the
backends' typed sections and `local.modle` is refused with the nearest valid key.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model

from agentrft.config import Config, ConfigError, explain_validation
from agentrft.config_files import config_data
from agentrft.plugins import get_plugins

__all__ = [
    "config_model",
    "default_config",
    "installed_sections",
    "load_config",
    "validate_config",
]


def installed_sections() -> dict[str, type[BaseModel]]:
    """Backend name -> its config section model, for every installed backend that has one."""
    return {
        name: cls.config_section
        for name, cls in get_plugins().backend_classes().items()
        if cls.config_section is not None
    }


def config_model(sections: Mapping[str, type[BaseModel]] | None = None) -> type[Config]:
    """`Config` with one field per section (default: the installed backends'), so
    `config.local` and `config.sagemaker` are typed sections and `local.modle` is refused."""
    chosen = installed_sections() if sections is None else dict(sections)
    return _config_model(tuple(sorted(chosen.items())))


@lru_cache(maxsize=16)
def _config_model(sections: tuple[tuple[str, type[BaseModel]], ...]) -> type[Config]:
    if not sections:
        return Config
    for name, model in sections:
        if name in Config.model_fields:
            raise ConfigError(
                f"backend {name!r} cannot own a config section: {name!r} is a core key"
            )
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigError(f"backend {name!r}: config_section must be a pydantic model")
    fields: dict[str, Any] = {
        name: (model, Field(default_factory=model, description=(model.__doc__ or "").strip()))
        for name, model in sections
    }
    return create_model("Config", __base__=Config, __module__=__name__, **fields)


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    values: dict[str, Any] | None = None,
    sections: Mapping[str, type[BaseModel]] | None = None,
) -> Config:
    """Load `path` (optional), apply `values` (dotted keys) then `overrides` (`a.b=v`)."""
    model = config_model(sections)
    data = config_data(path, values or {}, overrides or [])
    # Validated here, as `validate_config` does: one pass from the file to the model.
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        source = str(path) if path else "config"
        raise ConfigError(explain_validation(exc, source, model)) from None


def validate_config(
    data: dict[str, Any],
    source: str = "config",
    sections: Mapping[str, type[BaseModel]] | None = None,
) -> Config:
    """`data` (a nested dict) as a `Config` with the installed backends' sections."""
    model = config_model(sections)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(explain_validation(exc, source, model)) from None


def default_config() -> Config:
    """Every default, with the installed backends' sections."""
    return validate_config({})
