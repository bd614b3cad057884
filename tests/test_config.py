"""Config: YAML and TOML files, `--set` overrides, and unknown keys with the nearest name."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrft.config import (
    SHARED_HYPERPARAMETERS,
    Config,
    ConfigError,
    dump_config,
    episode_limits,
    read_config_file,
)
from agentrft.config_model import load_config

YAML = """\
task: find_number
group_size: 16
learning_rate: 1.0e-5
pass_k_values: [1, 4]
local:
  model: tiny
  lora_target_modules: [q_proj, v_proj]
sagemaker:
  region: us-west-2
  tags: {team: rl}
eval:
  temperatures: [0.6, 1.0]
"""

TOML = """\
task = "find_number"
group_size = 16
learning_rate = 1.0e-5
pass_k_values = [1, 4]

[local]
model = "tiny"
lora_target_modules = ["q_proj", "v_proj"]

[sagemaker]
region = "us-west-2"
tags = { team = "rl" }

[eval]
temperatures = [0.6, 1.0]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_and_toml_give_the_same_config(tmp_path: Path) -> None:
    from_yaml = load_config(_write(tmp_path, "c.yaml", YAML))
    from_toml = load_config(_write(tmp_path, "c.toml", TOML))
    assert from_yaml == from_toml
    assert from_yaml.group_size == 16
    assert from_yaml.learning_rate == pytest.approx(1e-5)
    assert from_yaml.local.model == "tiny"
    assert from_yaml.local.lora_target_modules == ["q_proj", "v_proj"]
    assert from_yaml.sagemaker.tags == {"team": "rl"}
    assert from_yaml.eval.temperatures == [0.6, 1.0]


def test_overrides_win_over_flags_which_win_over_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.yaml", YAML)
    cfg = load_config(
        path,
        values={"local.model": "from-flag", "max_steps": 7, "local.adapter": None},
        overrides=["local.model=from-set", "group_size=4", "eval.temperatures=[0.2]"],
    )
    assert cfg.local.model == "from-set"
    assert cfg.max_steps == 7
    assert cfg.group_size == 4
    assert cfg.eval.temperatures == [0.2]
    assert cfg.local.adapter is None  # None flags do not override


def test_override_values_are_typed() -> None:
    cfg = load_config(overrides=["clip_high_threshold=1.28", "local.kl_beta=0", "seed=7"])
    assert cfg.clip_high_threshold == pytest.approx(1.28)
    assert cfg.seed == 7 and isinstance(cfg.seed, int)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("group_sise=4", "unknown key 'group_sise'; did you mean 'group_size'?"),
        ("learning_rte=1", "did you mean 'learning_rate'?"),
        ("local.modle=x", "unknown key 'local.modle'; did you mean 'local.model'?"),
        ("sagemaker.regoin=x", "did you mean 'sagemaker.region'?"),
        ("eval.temperature=[1]", "did you mean 'eval.temperatures'?"),
    ],
)
def test_unknown_key_suggests_the_nearest(override: str, expected: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(overrides=[override])
    assert expected in str(exc.value)


def test_unknown_key_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.toml", "[local]\nmodle = 'x'\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(path) in str(exc.value) and "did you mean 'local.model'?" in str(exc.value)


def test_bad_values_are_explained() -> None:
    with pytest.raises(ConfigError, match=r"group_size: .*(greater|less) than"):
        load_config(overrides=["group_size=1"])
    with pytest.raises(ConfigError, match="loss_fn"):
        load_config(overrides=["loss_fn=[1, 2]"])  # a name is a string (which names: the backend)
    with pytest.raises(ConfigError, match="key=value"):
        load_config(overrides=["group_size"])


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        read_config_file(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="does not parse"):
        read_config_file(_write(tmp_path, "bad.toml", "group_size = = 3"))
    with pytest.raises(ConfigError, match=r"use a \.yaml, \.yml or \.toml"):
        read_config_file(_write(tmp_path, "c.ini", "x=1"))
    with pytest.raises(ConfigError, match="mapping"):
        read_config_file(_write(tmp_path, "list.yaml", "- 1\n- 2\n"))


@pytest.mark.parametrize(("fmt", "suffix"), [("yaml", ".yaml"), ("toml", ".toml")])
def test_dump_reads_back_to_the_same_config(tmp_path: Path, fmt: str, suffix: str) -> None:
    cfg = load_config(_write(tmp_path, "c.yaml", YAML))
    path = _write(tmp_path, "dumped" + suffix, dump_config(cfg, fmt))  # type: ignore[arg-type]
    assert load_config(path) == cfg


def test_shared_hyperparameters_sit_at_the_top_level() -> None:
    assert set(SHARED_HYPERPARAMETERS) <= set(Config.model_fields)


# --- sections from the backends ------------------------------------------------------------


def test_every_field_is_described_where_it_is_declared() -> None:
    """TRL's habit: what a knob does and why its default, next to it (installed backends'
    sections included)."""
    from pydantic import BaseModel

    from agentrft.config_model import config_model

    def undescribed(model: type[BaseModel], prefix: str = "") -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                out += undescribed(ann, f"{prefix}{name}.")
            elif not (field.description or "").strip():
                out.append(prefix + name)
        return out

    model = config_model()
    assert {"local", "sagemaker"} <= set(model.model_fields)
    assert undescribed(model) == []


def test_sections_come_from_the_installed_backends(tiny_plugins) -> None:
    # tiny_plugins installs no backend: no section, and naming one says which exist.
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["local.model=x"])
    assert "unknown key 'local' (a backend's section? installed backends' sections: none" in str(
        info.value
    )
    assert set(load_config().model_dump()) == set(Config.model_fields)


def test_a_setting_one_backend_reads_is_named_in_its_section() -> None:
    with pytest.raises(ConfigError, match=r"it is a sagemaker setting: sagemaker\.rollout_timeout"):
        load_config(overrides=["rollout_timeout=900"])
    config = load_config(overrides=["sagemaker.rollout_timeout=900"])
    assert config.sagemaker.rollout_timeout == 900  # type: ignore[attr-defined]
    assert "rollout_timeout" not in SHARED_HYPERPARAMETERS


def test_a_backend_section_may_not_take_a_core_name() -> None:
    from agentrft.config import Section
    from agentrft.config_model import config_model

    class Bad(Section):
        """x"""

    with pytest.raises(ConfigError, match="backend 'eval' cannot own a config section"):
        config_model({"eval": Bad})


def test_episode_limits_put_the_set_keys_over_the_tasks_own() -> None:
    from agentrft.testing import FindNumberTask

    task = FindNumberTask()
    assert episode_limits(task, Config()) == task.limits
    merged = episode_limits(task, load_config(overrides=["limits.max_turns=2"]))
    assert merged.max_turns == 2
    assert (merged.max_tool_calls, merged.timeout_s) == (
        task.limits.max_tool_calls,
        task.limits.timeout_s,
    )


def test_a_backend_sees_its_section_typed_or_a_clear_error() -> None:
    """`as_local` / `as_sagemaker` give the same object, typed; a config built without the
    backend's section (the core schema alone) is refused, naming the way to build one."""
    from agentrft.backends.local.settings import as_local
    from agentrft.backends.sagemaker.settings import as_sagemaker
    from agentrft.config_model import validate_config

    config = load_config(overrides=["local.micro_batch_size=3"])
    assert as_local(config) is config and as_local(config).local.micro_batch_size == 3
    assert as_sagemaker(config) is config
    core_only = validate_config({}, sections={})
    with pytest.raises(ConfigError, match="no `local` section; build the config with"):
        as_local(core_only)
    with pytest.raises(ConfigError, match="no `sagemaker` section"):
        as_sagemaker(core_only)
