"""Config -> the inference side of a local run: model path, device, sampler (vLLM or
transformers) and chat tokenizer (the trainer is `trainer.make_trainer`).

- `local.model` None on a machine without a GPU: the tiny model is built and cached, and
  the CPU preset (below) fills in hyperparameters the user did not set.
- `local.inference`: `auto` uses vLLM when CUDA and a vLLM interpreter are present (or a
  `vllm_url` is given), else the transformers sampler; `vllm` / `transformers` force one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.backends.local.devices import cpu_has_fast_bf16, cuda_available, resolve_device
from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
from agentrft.backends.local.inference.sampler import TokenSampler
from agentrft.backends.local.models import model_loading
from agentrft.backends.local.models.tiny_model import TinySize
from agentrft.backends.local.settings import LocalRunConfig

log = logging.getLogger(__name__)

#: Applied when the tiny model runs on CPU, to top-level fields the user did not set: small
#: enough that `agentrft train --task wordle --backend local` ends in minutes on 2 cores.
CPU_PRESET: dict[str, Any] = {
    "global_batch_size": 4,
    "group_size": 8,
    "max_steps": 20,
    "sampling_max_tokens": 40,
    "learning_rate": 1e-3,
    "lora_rank": 16,
    "lora_alpha": 32,
    "val_every": 0,
}
#: Same idea for the `local`, `eval` and `limits` sections.
CPU_PRESET_LOCAL: dict[str, Any] = {
    "sft_warmup_steps": 40,
    "sft_learning_rate": 3e-3,
    "micro_batch_size": 16,
    # Eager attention on CPU is quadratic in length: a 10k-token expert game would need
    # ~17 GB. The first 2k tokens hold the prompt and the first moves, which is what the
    # warm-up must teach.
    "max_sequence_length": 2048,
    # After a short warm-up the tiny model breaks its tool call in most turns at
    # temperature 1; with the blame on the turn that broke it, GRPO keeps the calls it
    # learns (measured on Wordle: without it, 1 seed in 3 gained nothing).
    "format_credit": 0.5,
}
CPU_PRESET_EVAL: dict[str, Any] = {"n": 32}
#: Each turn re-reads the whole game; six turns bound a CPU episode (a Wordle game is six
#: guesses, and a malformed call then costs a turn).
CPU_PRESET_LIMITS: dict[str, Any] = {"max_turns": 6}


#: Applied to a real model (`local.model` set) on a machine without a GPU, to the fields the
#: user did not set: one `agentrft train` that shows a small pretrained model (SmolLM2-135M)
#: learning a short workflow on 2 cores in about ten minutes (docs/local-backend.md, "A real
#: model on CPU"). Eight prompts a step with four rollouts each: more distinct rows per step
#: than 4 x 8 at the same cost, which is what a decision that must generalise needs.
REAL_CPU_PRESET: dict[str, Any] = {
    # 4 prompts x 8 rollouts: with four choices a group of 8 usually holds a right and a
    # wrong route (at 8 x 4 most groups had no variance within a few steps).
    "global_batch_size": 4,
    "group_size": 8,
    "max_steps": 16,
    "sampling_max_tokens": 64,
    # Measured on ticket_triage: 1e-4 barely moved the policy in 16 steps, 1e-3 broke the
    # tool-call format within a few; temperature 1 keeps the groups' choices apart (at 0.7
    # a group often made one choice eight times: no advantage).
    "learning_rate": 3e-4,
    "temperature": 1.0,
    "lora_rank": 8,
    "lora_alpha": 16,
    "val_every": 0,
}
REAL_CPU_PRESET_LOCAL: dict[str, Any] = {
    "sft_warmup_steps": 16,
    "sft_learning_rate": 1e-3,
    "micro_batch_size": 8,
    "format_credit": 0.5,
    "lr_warmup_steps": 2,
    # Without a KL anchor lr 3e-4 drove the policy onto one team within ~6 steps (every
    # group the same answer: no advantage left); 0.1 kept it spread while it learned.
    "kl_beta": 0.1,
}
#: Greedy: the table then measures the policy's decision, not the sampling noise around it
#: (at temperature 1 a 64-row eval adds each row's sampling luck to the standard error).
REAL_CPU_PRESET_EVAL: dict[str, Any] = {"n": 64, "temperatures": [0.0], "concurrency": 64}


def uses_tiny_model(config: LocalRunConfig) -> bool:
    return config.local.model is None and not cuda_available()


def uses_real_model_on_cpu(config: LocalRunConfig) -> bool:
    """A model is named and the run has no GPU (`local.device` cpu, or auto without CUDA)."""
    if config.local.model is None:
        return False
    return config.local.device == "cpu" or (config.local.device == "auto" and not cuda_available())


def apply_cpu_preset(config: LocalRunConfig, *, has_expert: bool = True) -> LocalRunConfig:
    """`config` with a CPU preset filling the fields it does not set: `CPU_PRESET` for the
    built-in tiny model, `REAL_CPU_PRESET` for a real model on CPU; on a GPU, unchanged.

    The SFT warm-up is part of the preset only for tasks with warm-up games (an expert, or
    a withheld copy).
    """
    if uses_tiny_model(config):
        presets = (CPU_PRESET, CPU_PRESET_LOCAL, CPU_PRESET_EVAL, CPU_PRESET_LIMITS)
    elif uses_real_model_on_cpu(config):
        local = dict(REAL_CPU_PRESET_LOCAL)
        if cpu_has_fast_bf16():
            local["dtype"] = "bfloat16"
        presets = (REAL_CPU_PRESET, local, REAL_CPU_PRESET_EVAL, {})
    else:
        return config
    preset, preset_local, preset_eval, preset_limits = presets
    top = {k: v for k, v in preset.items() if k not in config.model_fields_set}
    loc = {
        k: v
        for k, v in preset_local.items()
        if k not in config.local.model_fields_set and (has_expert or k != "sft_warmup_steps")
    }
    ev = {k: v for k, v in preset_eval.items() if k not in config.eval.model_fields_set}
    lim = {k: v for k, v in preset_limits.items() if k not in config.limits.model_fields_set}
    if not (top or loc or ev or lim):
        return config
    return config.model_copy(
        update={
            **top,
            "local": config.local.model_copy(update=loc),
            "eval": config.eval.model_copy(update=ev),
            "limits": config.limits.model_copy(update=lim),
        }
    )


def resolve_model_path(model: str | None, tiny_model: TinySize = "1m") -> str:
    """The model directory, `.gguf` file or id to load (`local.model`); builds the tiny model
    (`local.tiny_model`) when none is configured. `model` may also be `pkg:MODULE` (a GGUF
    inside an installed package)."""
    if model:
        from agentrft.backends.local.models.gguf_model import resolve_local_model

        local = resolve_local_model(model)
        if local is not None:
            return local
        # A hub id: fetch it here once, so the vLLM server (started offline) and the
        # trainer read the same local snapshot.
        from huggingface_hub import snapshot_download

        return snapshot_download(model)
    if cuda_available():
        raise ValueError(
            "local.model is not set; on a GPU machine name a model, e.g. "
            "--set local.model=Qwen/Qwen3-1.7B (the tiny built-in model is for CPU demos)"
        )
    from agentrft.backends.local.models.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model(tiny_model, seed=0))


def generation_eos_ids(path: str) -> list[int]:
    """The eos ids a model directory's generation_config.json lists (Llama 3.1: <|eom_id|>
    and <|eot_id|>; gpt-oss: <|return|> and <|call|>), [] without one: they end turns too."""
    file = Path(path) / "generation_config.json"
    if not file.is_file():
        return []
    try:
        eos = json.loads(file.read_text()).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        return []
    ids = eos if isinstance(eos, list) else [eos]
    return [int(i) for i in ids if isinstance(i, int)]


def set_cpu_threads(cpu_threads: int | None, model: str | None, device: str) -> None:
    """Apply `local.cpu_threads` (process-wide) when running on CPU (the tiny model: 1)."""
    if device != "cpu":
        return
    import torch

    threads = cpu_threads or (1 if model is None else None)
    if threads:
        torch.set_num_threads(threads)


def resolve_inference(config: LocalRunConfig, device: str) -> str:
    choice = config.local.inference
    if choice != "auto":
        return choice
    if config.local.vllm_url:
        return "vllm"
    if device.startswith("cuda"):
        from agentrft.backends.local.inference.vllm_server import find_vllm_python

        if find_vllm_python(config.local.vllm_python) is not None:
            return "vllm"
    return "transformers"


@dataclass(frozen=True)
class SamplerSettings:
    """What the inference side of a run is built from, with the device and the engine
    (transformers or vLLM) resolved. A run's spec (`run/spec.py`) makes it once."""

    #: `local.model` (None: the built-in tiny model, `tiny_model` its size).
    model: str | None
    tiny_model: TinySize
    device: str
    inference: str
    dtype: str
    seed: int
    cpu_threads: int | None
    vllm_url: str | None
    vllm_python: str | None
    vllm_args: tuple[str, ...]
    #: The LoRA rank the vLLM server must accept adapters of.
    lora_rank: int
    #: The transformers sampler in a child process (`local.sampler_process`).
    sampler_process: bool = False
    #: Adapters the sampler holds at once: the current one, the next, and one per step the
    #: rollouts may lag (`max_steps_off_policy`).
    live_adapters: int = 2

    @classmethod
    def of(cls, config: LocalRunConfig, *, device: str | None = None) -> SamplerSettings:
        """The sampler's part of a run's (resolved) config; `device` when the caller resolved
        it already (a run's spec, shared with the trainer), else resolved here."""
        device = device or resolve_device(config.local.device)
        return cls(
            model=config.local.model,
            tiny_model=config.local.tiny_model,
            device=device,
            inference=resolve_inference(config, device),
            dtype=config.local.dtype,
            seed=config.seed,
            cpu_threads=config.local.cpu_threads,
            vllm_url=config.local.vllm_url,
            vllm_python=config.local.vllm_python,
            vllm_args=tuple(config.local.vllm_args),
            lora_rank=config.lora_rank,
            live_adapters=config.max_steps_off_policy + 2,
            sampler_process=config.local.sampler_process,
        )


#: uvicorn's access-log line (`INFO:     127.0.0.1:38176 - "POST /v1/completions ..."`).
_ACCESS_LINE = re.compile(r'^INFO:\s+\S+ - "')


@dataclass
class Engine:
    """A sampler and the chat tokenizer, plus what must be closed after use."""

    model_path: str
    device: str
    inference: str
    sampler: TokenSampler
    chat: ChatTokenizer
    _closers: list[Any] = field(default_factory=list)
    #: The vLLM server this engine started (a `VLLMServer`), or None.
    server: Any = None
    #: The vLLM server's base URL (started here or reached at local.vllm_url), or None.
    url: str | None = None

    async def sampler_problem(self, timeout_s: float = 10.0) -> str | None:
        """Why the sampler can serve no more, or None when it can: the vLLM server this
        engine started has exited, or a vLLM server no longer answers `/health` within
        `timeout_s`. A sampler in a process of its own says when that process ended
        (`problem()`); the transformers sampler in this process: None."""
        own = getattr(self.sampler, "problem", None)
        if callable(own) and (said := own()) is not None:
            return str(said)
        if self.server is not None:
            code = self.server.exit_code()
            if code is not None:
                how = f"exited with code {code}"
                if code < 0:  # killed: by the OOM killer (SIGKILL) or by a person
                    with contextlib.suppress(ValueError):
                        how = f"was killed by {signal.Signals(-code).name}"
                # Its own last words, not the access log of the requests before them.
                lines = self.server.log_tail(400).splitlines()
                said = [x for x in lines if not _ACCESS_LINE.match(x)][-8:]
                return (
                    f"the vLLM server (pid {self.server.pid()}) {how}; its log is "
                    f"{self.server.log_path}" + (", ending:\n" + "\n".join(said) if said else "")
                )
        if self.url is None:
            return None
        import httpx

        try:
            async with httpx.AsyncClient(timeout=timeout_s) as client:
                status = (await client.get(f"{self.url}/health")).status_code
        except httpx.HTTPError as exc:
            return f"the vLLM server at {self.url} does not answer /health ({type(exc).__name__})"
        if status != 200:
            return f"the vLLM server at {self.url} answers /health with HTTP {status}"
        return None

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.sampler.aclose()
        for close in reversed(self._closers):
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


def make_engine(settings: SamplerSettings, model_path: str | None = None) -> Engine:
    """Start the sampler `settings` describe (a vLLM server when chosen) and load the
    tokenizer; `model_path` instead of `settings.model` (a run's own resolved path)."""
    path = model_path or resolve_model_path(settings.model, settings.tiny_model)
    # A GGUF file is served from its converted copy: loads in a second, and vLLM serves the
    # very weights the trainer trains.
    path = model_loading.loadable_path(path)
    device, inference = settings.device, settings.inference
    set_cpu_threads(settings.cpu_threads, settings.model, device)
    if inference == "transformers" and settings.sampler_process:
        from agentrft.backends.local.inference.process_sampler import ProcessSampler

        chat = ChatTokenizer(
            model_loading.load_tokenizer(path), eos_token_ids=generation_eos_ids(path)
        )
        threads = settings.cpu_threads or (1 if settings.model is None else None)
        child = ProcessSampler(
            path,
            device=device,
            dtype=settings.dtype,
            seed=settings.seed,
            stop_ids=chat.end_of_turn_ids,
            threads=threads if device == "cpu" else None,
        )
        return Engine(path, device, inference, child, chat)
    if inference == "transformers":
        from agentrft.backends.local.inference.hf_sampler import HFSampler

        hf = HFSampler.from_pretrained(
            path, device=device, dtype=settings.dtype, seed=settings.seed
        )
        chat = ChatTokenizer(hf.tokenizer, eos_token_ids=generation_eos_ids(path))
        hf.stop_ids = chat.end_of_turn_ids
        return Engine(path, device, inference, hf, chat)

    from agentrft.backends.local.inference.vllm_sampler import VLLMSampler
    from agentrft.backends.local.inference.vllm_server import (
        VLLMServer,
        VLLMServerConfig,
        check_server,
        find_vllm_python,
    )

    chat = ChatTokenizer(model_loading.load_tokenizer(path), eos_token_ids=generation_eos_ids(path))
    closers: list[Any] = []
    if settings.vllm_url:
        url = settings.vllm_url.rstrip("/")
        served_models = check_server(url)  # a clear error when it is not a ready vLLM server
        served = path if path in served_models or not served_models else served_models[0]
    else:
        python = find_vllm_python(settings.vllm_python)
        if python is None:
            raise ValueError(
                "local.inference is 'vllm' but no vLLM interpreter was found; pip install "
                "'agentrft[vllm]', set local.vllm_python, or use local.inference=transformers"
            )
        server = VLLMServer(
            VLLMServerConfig(
                model=path,
                python=python,
                device="cuda" if device.startswith("cuda") else "cpu",
                max_lora_rank=_vllm_rank(settings.lora_rank),
                max_loras=max(4, settings.live_adapters),
                seed=settings.seed,
                extra_args=settings.vllm_args,
            )
        )
        url = server.start()
        served = server.model_name
        closers.append(server.stop)
    sampler = VLLMSampler(url, served, stop_token_ids=chat.end_of_turn_ids)
    started = None if settings.vllm_url else server
    return Engine(path, device, "vllm", sampler, chat, closers, server=started, url=url)


def _vllm_rank(rank: int) -> int:
    # vLLM accepts only these --max-lora-rank values.
    for allowed in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    return rank
