"""VLLMSampler and the server manager against a loopback fake (no vLLM needed; runs in CI).

The fake speaks just enough of vLLM's OpenAI server (/v1/completions with token ids, the
LoRA load/unload endpoints, /health, /v1/models) for the client's behaviour to be checked:
request bodies, adapter versioning, and every error path.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentrft.backends.local.inference.sampler import SamplerError, TokenSampler
from agentrft.backends.local.inference.vllm_sampler import (
    AdapterLoadError,
    VLLMRequestError,
    VLLMSampler,
    open_vllm_sampler,
)
from agentrft.backends.local.inference.vllm_server import (
    VLLMServer,
    VLLMServerConfig,
    VLLMServerError,
    check_server,
    free_port,
    vllm_endpoint,
)
from agentrft.policy import PolicyError, Sampling


class FakeVLLM:
    """A tiny threaded HTTP server on 127.0.0.1 imitating vLLM's replies."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.adapters: set[str] = set()
        # path -> list of (status, body) to answer with, consumed in order (then 200 as usual)
        self.script: dict[str, list[tuple[int, Any]]] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any) -> None:
                raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, "")
                elif self.path == "/v1/models":
                    data = [{"id": "base"}] + [{"id": a} for a in sorted(fake.adapters)]
                    self._send(200, {"data": data})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])) or b"{}")
                fake.requests.append((self.path, body))
                scripted = fake.script.get(self.path)
                if scripted:
                    self._send(*scripted.pop(0))
                    return
                if self.path == "/v1/completions":
                    n = min(body["max_tokens"], 3)
                    ids = [7 + i for i in range(n)]
                    finish = "length" if n == body["max_tokens"] else "stop"
                    self._send(
                        200,
                        {
                            "choices": [
                                {
                                    "text": "abc"[:n],
                                    "token_ids": ids,
                                    "logprobs": {"token_logprobs": [-0.5] * n},
                                    "finish_reason": finish,
                                }
                            ]
                        },
                    )
                elif self.path == "/v1/load_lora_adapter":
                    if not str(body["lora_path"]).startswith("/adapters/"):
                        self._send(
                            404,  # what vLLM 0.32 answers for a missing path
                            {
                                "error": {
                                    "message": f"Loading lora {body['lora_name']} failed: "
                                    f"No adapter found for {body['lora_path']}",
                                    "code": 400,
                                }
                            },
                        )
                        return
                    fake.adapters.add(body["lora_name"])
                    self._send(200, "Success")
                elif self.path == "/v1/unload_lora_adapter":
                    if body["lora_name"] not in fake.adapters:
                        self._send(404, {"error": {"message": "not found", "code": 404}})
                        return
                    fake.adapters.discard(body["lora_name"])
                    self._send(200, "Success")
                else:
                    self._send(404, {"detail": "Not Found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def posts(self, path: str) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p == path]


@pytest.fixture
def fake():
    server = FakeVLLM()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
async def sampler(fake):
    s = VLLMSampler(fake.url, "base", retries=2, backoff_s=0.01, stop_token_ids=[2, 3], tag="t")
    yield s
    await s.aclose()


SAMPLING = Sampling(temperature=0.7, top_p=0.9, max_tokens=5, seed=11)


def test_is_a_token_sampler(sampler):
    assert isinstance(sampler, TokenSampler)


async def test_request_is_token_ids_in_token_ids_out(sampler, fake):
    gen = await sampler.generate([1, 2, 3], SAMPLING)
    assert gen.token_ids == [7, 8, 9]
    assert gen.logprobs == [-0.5, -0.5, -0.5]
    assert gen.finish_reason == "stop"
    (body,) = fake.posts("/v1/completions")
    assert body["prompt"] == [1, 2, 3]
    assert body["model"] == "base"  # nothing loaded yet: the base model itself
    assert body["return_token_ids"] is True
    assert body["logprobs"] == 0
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["seed"] == 11
    assert body["stop_token_ids"] == [2, 3]
    assert body["skip_special_tokens"] is False
    assert "prompt_logprobs" not in body


async def test_length_finish_is_truncation(sampler):
    gen = await sampler.generate([1], SAMPLING.model_copy(update={"max_tokens": 2}))
    assert gen.finish_reason == "length"
    assert len(gen.token_ids) == 2


async def test_prompt_logprobs_are_refused(sampler, fake):
    bad = SAMPLING.model_copy(update={"extra": {"prompt_logprobs": 1}})
    with pytest.raises(SamplerError, match="prompt_logprobs"):
        await sampler.generate([1], bad)
    assert fake.posts("/v1/completions") == []


async def test_each_load_gets_a_new_server_name_and_the_old_one_is_unloaded(sampler, fake):
    assert await sampler.load_adapter_versioned("policy", "/adapters/v1") == "policy@t-1"
    await sampler.generate([1], SAMPLING, adapter="policy")
    await sampler.load_adapter("policy", "/adapters/v2")
    assert sampler.adapters == {"policy": "policy@t-2"}
    assert fake.adapters == {"policy@t-2"}  # policy@1 unloaded on the server
    await sampler.generate([1], SAMPLING, adapter="policy")
    models = [b["model"] for b in fake.posts("/v1/completions")]
    assert models == ["policy@t-1", "policy@t-2"]
    assert [b["lora_path"] for b in fake.posts("/v1/load_lora_adapter")] == [
        "/adapters/v1",
        "/adapters/v2",
    ]


async def test_unload_waits_for_in_flight_requests(fake):
    # A slow completion keeps policy@1 busy while policy@2 replaces it.
    import asyncio

    sampler = VLLMSampler(fake.url, "base", retries=0, tag="t")
    await sampler.load_adapter("policy", "/adapters/v1")
    started = asyncio.Event()
    real_post = sampler._post_json

    async def slow_post(path: str, body: dict[str, Any]) -> Any:
        started.set()
        await asyncio.sleep(0.2)
        return await real_post(path, body)

    sampler._post_json = slow_post  # type: ignore[method-assign]
    task = asyncio.create_task(sampler.generate([1], SAMPLING, adapter="policy"))
    await started.wait()
    await sampler.load_adapter("policy", "/adapters/v2")
    assert "policy@t-1" in fake.adapters  # still serving the in-flight request
    await task
    assert fake.adapters == {"policy@t-2"}
    await sampler.aclose()


async def test_base_requests_go_to_the_zero_adapter_once_adapters_are_used(sampler, fake):
    await sampler.load_adapter("policy", "/adapters/v1")
    with pytest.raises(SamplerError, match="base adapter"):
        await sampler.generate([1], SAMPLING)  # would mix base and adapter requests
    await sampler.load_base_adapter("/adapters/zero")
    await sampler.generate([1], SAMPLING)
    assert fake.posts("/v1/completions")[-1]["model"] == "base@t-1"


async def test_open_vllm_sampler_on_a_url_sends_base_requests_to_the_zero_adapter(fake):
    async with open_vllm_sampler("m", url=fake.url, base_adapter="/adapters/zero") as s:
        assert s.model == "base"  # the name the server lists
        await s.generate([1], SAMPLING)
    assert fake.posts("/v1/completions")[0]["model"] == f"base@{s.tag}-1"
    assert fake.adapters == set()  # unloaded on exit


async def test_open_vllm_sampler_starts_and_stops_a_server(tmp_path):
    """The start branch: launch, wait for /health, load the base adapter, stop on exit.
    The 'server' is this module's fake run as a subprocess in place of vLLM."""
    here = Path(__file__).parent

    class FakeServerConfig(VLLMServerConfig):
        def command(self, python: str, port: int) -> list[str]:
            code = (
                f"import sys; sys.path.insert(0, {str(here)!r}); "
                "from test_vllm_client_errors import FakeVLLM; "
                f"FakeVLLM({port}).server.serve_forever(0.02)"
            )
            return [python, "-c", code]

    config = FakeServerConfig(model=str(tmp_path), python=sys.executable, startup_timeout_s=60)
    async with open_vllm_sampler(str(tmp_path), server=config, base_adapter="/adapters/z") as s:
        gen = await s.generate([1, 2], SAMPLING)
        assert gen.token_ids == [7, 8, 9]
        assert s.adapters == {"base": f"base@{s.tag}-1"}
        url = s.base_url
    with pytest.raises(VLLMServerError):
        check_server(url, timeout_s=2)  # stopped


async def test_unknown_adapter_is_a_policy_error(sampler):
    with pytest.raises(VLLMRequestError, match="not loaded") as info:
        await sampler.generate([1], SAMPLING, adapter="nope")
    assert isinstance(info.value, PolicyError)


async def test_default_tags_differ_and_close_unloads(fake):
    a, b = VLLMSampler(fake.url, "base"), VLLMSampler(fake.url, "base")
    assert a.tag != b.tag
    await a.load_adapter("policy", "/adapters/v1")
    await b.load_adapter("policy", "/adapters/v1")  # same logical name, no clash
    assert len(fake.adapters) == 2
    await a.aclose()
    await b.aclose()
    assert fake.adapters == set()


async def test_unload_unknown_is_silent_and_unload_removes(sampler, fake):
    await sampler.unload_adapter("never-loaded")
    await sampler.load_adapter("a", "/adapters/a")
    await sampler.unload_adapter("a")
    assert fake.adapters == set()
    assert sampler.adapters == {}


async def test_bad_adapter_path_is_a_clear_error(sampler, fake):
    with pytest.raises(AdapterLoadError) as info:
        await sampler.load_adapter("policy", "/tmp/missing-adapter")
    msg = str(info.value)
    assert "'policy'" in msg and "/tmp/missing-adapter" in msg and "404" in msg
    assert "No adapter found" in msg and "max-lora-rank" in msg
    assert "--enable-lora" not in msg
    assert sampler.adapters == {}  # nothing half-registered


async def test_lora_endpoints_missing_say_how_to_enable_them(sampler, fake):
    fake.script["/v1/load_lora_adapter"] = [(404, {"detail": "Not Found"})]
    with pytest.raises(AdapterLoadError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
        await sampler.load_adapter("policy", "/adapters/v1")


async def test_4xx_is_not_retried(sampler, fake):
    fake.script["/v1/completions"] = [
        (400, {"error": {"message": "This model's maximum context length is 512", "code": 400}})
    ]
    with pytest.raises(VLLMRequestError, match="maximum context length") as info:
        await sampler.generate([1], SAMPLING)
    assert info.value.kind == "http_error" and info.value.status == 400
    assert len(fake.posts("/v1/completions")) == 1


async def test_5xx_is_retried_then_succeeds(sampler, fake):
    fake.script["/v1/completions"] = [(500, {"error": {"message": "boom"}})]
    gen = await sampler.generate([1], SAMPLING)
    assert gen.token_ids == [7, 8, 9]
    assert len(fake.posts("/v1/completions")) == 2


async def test_5xx_after_retries_is_an_http_error(sampler, fake):
    fake.script["/v1/completions"] = [(503, "Service Unavailable")] * 3
    with pytest.raises(VLLMRequestError, match="503") as info:
        await sampler.generate([1], SAMPLING)
    assert info.value.kind == "http_error" and info.value.status == 503
    assert len(fake.posts("/v1/completions")) == 3  # 1 + 2 retries


async def test_429_is_rate_limited(sampler, fake):
    fake.script["/v1/completions"] = [(429, {"error": {"message": "slow down"}})] * 3
    with pytest.raises(VLLMRequestError) as info:
        await sampler.generate([1], SAMPLING)
    assert info.value.kind == "rate_limited"


async def test_reply_without_token_ids_names_the_requirement(sampler, fake):
    fake.script["/v1/completions"] = [(200, {"choices": [{"text": "hi", "logprobs": None}]})]
    with pytest.raises(VLLMRequestError, match="return_token_ids"):
        await sampler.generate([1], SAMPLING)


async def test_server_down_is_a_policy_error():
    port = free_port()
    sampler = VLLMSampler(f"http://127.0.0.1:{port}", "base", retries=1, backoff_s=0.01)
    with pytest.raises(VLLMRequestError, match="unreachable") as info:
        await sampler.generate([1], SAMPLING)
    assert isinstance(info.value, PolicyError) and info.value.kind == "policy_error"
    with pytest.raises(AdapterLoadError, match="unreachable"):
        await sampler.load_adapter("policy", "/adapters/v1")
    await sampler.aclose()
    await sampler.aclose()  # twice is fine


async def test_server_down_ends_an_episode_with_a_reward():
    """Through the real agent loop: the episode records the failure and still gets a reward."""
    from agentrft import Environment, Task, tool
    from agentrft.backends.local.inference.chat_tokens import TokenPolicy
    from agentrft.backends.local.models.tiny_model import build_tokenizer
    from agentrft.reward import RewardResult
    from agentrft.rollout import run_episode

    class Env(Environment):
        @tool
        def submit(self, word: str) -> str:
            """Submit the answer.

            Args:
                word: The answer.
            """
            self.done = True
            return "ok"

    class Echo(Task[str]):
        name = "echo"

        def parse(self, prompt: str) -> str:
            return prompt

        def environment(self, instance: str) -> Environment:
            return Env()

        def reward(self, env: Environment, trajectory: Any) -> RewardResult:
            return RewardResult(total=1.0)

        def user_prompt(self, instance: str) -> str:
            return instance

    sampler = VLLMSampler(f"http://127.0.0.1:{free_port()}", "base", retries=0)
    traj = await run_episode(Echo(), "say hi", TokenPolicy(sampler, build_tokenizer()))
    assert traj.stop_reason == "policy_error"
    assert "unreachable" in traj.failures[0].detail
    assert traj.reward is not None
    await sampler.aclose()


# ------------------------------------------------------------------ server manager


def test_server_command_has_the_cpu_and_lora_flags():
    cfg = VLLMServerConfig(model="/m", device="cpu", max_model_len=512, max_lora_rank=8)
    argv = cfg.command("/py", 1234)
    assert argv[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    joined = " ".join(argv)
    for flag in (
        "--model /m",
        "--host 127.0.0.1",
        "--port 1234",
        "--dtype float32",
        "--max-model-len 512",
        "--enforce-eager",
        "--enable-lora",
        "--max-lora-rank 8",
        "--max-loras 4",
        "--logprobs-mode processed_logprobs",
    ):
        assert flag in joined
    env = cfg.environment()
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    gpu = VLLMServerConfig(model="/m", device="cuda").command("/py", 1)
    assert "--enforce-eager" not in gpu and "--dtype" not in gpu


def test_server_that_dies_while_starting_shows_its_log(tmp_path):
    # The test interpreter has no vllm: the process dies at once with ModuleNotFoundError.
    cfg = VLLMServerConfig(model=str(tmp_path), python=sys.executable, startup_timeout_s=60)
    server = VLLMServer(cfg)
    with pytest.raises(VLLMServerError, match="exited with code") as info:
        server.start()
    assert "No module named" in str(info.value)
    assert server.process is None  # cleaned up


def test_server_startup_timeout_stops_the_process(tmp_path):
    # A "server" that never listens: a Python that just sleeps.
    script = tmp_path / "sleeper.py"
    script.write_text("import sys, time\ntime.sleep(60)\n")
    cfg = VLLMServerConfig(model=str(tmp_path), python=sys.executable, startup_timeout_s=1.5)
    cfg_cmd = cfg.command

    def command(python: str, port: int) -> list[str]:
        return [python, str(script), *cfg_cmd(python, port)[3:]]

    cfg.command = command  # type: ignore[method-assign]
    server = VLLMServer(cfg)
    with pytest.raises(VLLMServerError, match=r"did not answer /health within 1\.5s"):
        server.start()
    assert server.process is None


def test_missing_model_dir_is_named(tmp_path):
    cfg = VLLMServerConfig(model=str(tmp_path / "nope"), python=sys.executable)
    with pytest.raises(VLLMServerError, match="does not exist"):
        VLLMServer(cfg).start()


def test_check_server_and_endpoint(fake):
    assert check_server(fake.url) == ["base"]
    with vllm_endpoint(fake.url + "/", None) as url:
        assert url == fake.url
    with pytest.raises(VLLMServerError, match="no vLLM server answers"):
        check_server(f"http://127.0.0.1:{free_port()}", timeout_s=2)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has exited
    except FileNotFoundError:
        return True


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux-only")
def test_server_dies_with_the_process_that_launched_it(tmp_path):
    """A trainer killed with SIGKILL (no atexit, no stop()) leaves no server behind."""
    import subprocess
    import time

    parent = tmp_path / "parent.py"
    parent.write_text(
        "import sys, time\n"
        "from agentrft.backends.local.inference.vllm_server import VLLMServer, VLLMServerConfig\n"
        "class Sleeper(VLLMServerConfig):\n"
        "    def command(self, python, port):\n"
        "        return [python, '-c', 'import time; time.sleep(120)']\n"
        f"server = VLLMServer(Sleeper(model={str(tmp_path)!r}, python=sys.executable))\n"
        "server.launch()\n"
        "print(server.process.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, str(parent)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        assert not _gone(child)
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the server outlived the process that launched it"
    finally:
        proc.kill()
