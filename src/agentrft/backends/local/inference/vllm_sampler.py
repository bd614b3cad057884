"""`VLLMSampler`: the `TokenSampler` interface over a vLLM OpenAI server (HTTP, httpx).

Tokens in, tokens out: `/v1/completions` with a prompt of token ids, `return_token_ids` and
`logprobs`, so training sees exactly the sampled ids. vLLM's known traps are avoided by
design rather than by care at each call site:

1. Base and adapter requests batched together get an adapter applied. This sampler never
   sends a base-model request once adapters are in play: `adapter=None` goes to a named
   base adapter (an all-zero LoRA, see `vllm_adapters.make_zero_adapter`).
2. Concurrent `prompt_logprobs` requests with LoRA crash the engine. This sampler never asks
   for `prompt_logprobs` (the trainer computes training logprobs itself) and refuses them in
   `sampling.extra`.
3. The prefix cache outlives a weight update under the same adapter name. Every
   `load_adapter(name, path)` registers the files under a NEW server-side name
   (`name@TAG-N`, TAG unique to this sampler so two runs on one server never collide) and
   unloads the previous one once no request uses it.
4. With the server's tool parser, one call cut by `max_tokens` drops every call of the reply.
   This sampler sends raw token prompts and returns raw ids; the caller parses tool calls
   (chat_tokens.py) and sees `finish_reason == "length"` as truncation.

Generation errors raise `VLLMRequestError`, both a `SamplerError` and a `PolicyError` with a
failure kind, so an episode records them and still ends with a reward. Adapter errors raise
`AdapterLoadError` naming the adapter, the path and the server's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from agentrft.backends.local.inference.sampler import Generation, SamplerError
from agentrft.backends.local.inference.vllm_server import VLLMServer, VLLMServerConfig, check_server
from agentrft.policies.retry import AttemptError, RetryPolicy
from agentrft.policy import PolicyError, Sampling
from agentrft.trajectory import FailureKind

log = logging.getLogger(__name__)

# Fields of `Sampling.extra` that would reintroduce a trap or break tokens-out.
_REFUSED_EXTRA = {
    "prompt_logprobs": "concurrent prompt_logprobs with LoRA crash vLLM; "
    "compute training logprobs in the trainer",
    "model": "the sampler chooses the model/adapter name",
    "prompt": "the prompt is the token ids",
    "return_token_ids": "always on",
    "n": "one sample per request (concurrency gives groups)",
    "stream": "the sampler reads whole responses",
}


class VLLMRequestError(SamplerError, PolicyError):
    """A generation request failed for good (server down, timeout, 4xx/5xx, bad reply)."""

    def __init__(
        self, message: str, kind: str = FailureKind.POLICY_ERROR, status: int | None = None
    ):
        PolicyError.__init__(self, message, kind=kind, status=status)


def _request_error(message: str, kind: str, status: int | None) -> VLLMRequestError:
    return VLLMRequestError(message, kind=kind, status=status)


class AdapterLoadError(SamplerError):
    """vLLM refused to load or unload an adapter; the message says why and what to check."""


class VLLMSampler:
    """Token sampler backed by a vLLM OpenAI server at `base_url`.

    Args:
        base_url: The server, e.g. `http://127.0.0.1:8000` (no `/v1`).
        model: The served base model name (what `/v1/models` lists). `adapter=None` goes to
            the base adapter once `load_base_adapter(path)` has loaded one; before any
            adapter is loaded it goes to the base model (nothing can be mixed with it yet);
            with other adapters loaded and no base adapter it is refused.
        timeout_s: Per-request timeout.
        retries: Extra attempts on connection errors and 5xx/429 answers (the core
            `RetryPolicy`, as every model client).
        backoff_s: First retry delay (doubles each attempt, with jitter).
        stop_token_ids: Ids that end a reply besides the model's eos (e.g.
            `ChatTokenizer.end_of_turn_ids`); the TokenSampler contract stops at them.
        api_key: Bearer token, if the server wants one (never logged).
        tag: Part of every server-side adapter name (default: random), so samplers sharing
            a server, or a restarted run, never reuse a name the server already holds.
    """

    BASE = "base"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout_s: float = 300.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        stop_token_ids: list[int] | frozenset[int] | None = None,
        api_key: str | None = None,
        tag: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.retries = retries
        self.backoff_s = backoff_s
        self._retry = RetryPolicy(retries, backoff_s)
        self.tag = tag if tag is not None else uuid.uuid4().hex[:6]
        self.stop_token_ids = sorted(stop_token_ids) if stop_token_ids else None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            headers=headers,
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self._versions: dict[str, int] = {}  # logical name -> last version number
        self._served: dict[str, str] = {}  # logical name -> current server-side name
        self._in_flight: dict[str, int] = {}  # server-side name -> running requests
        self._retired: set[str] = set()  # server-side names to unload when idle
        self._lock = asyncio.Lock()
        self._closed = False
        # Every payload sent, for tests that check what reaches the server (bounded).
        self.sent: list[dict[str, Any]] = []
        self.record_payloads = False

    # ----------------------------------------------------------------- generation

    def server_name(self, adapter: str | None) -> str:
        """The name a request for `adapter` uses on the server right now."""
        if adapter is None:
            if self.BASE in self._served:
                return self._served[self.BASE]
            if self._served:
                raise SamplerError(
                    "adapters are loaded but no base adapter: a base-model request could be "
                    "batched with adapter requests and get an adapter applied (vLLM trap). "
                    "Call load_base_adapter(make_zero_adapter(...)) first"
                )
            return self.model
        try:
            return self._served[adapter]
        except KeyError:
            raise VLLMRequestError(
                f"adapter {adapter!r} is not loaded (loaded: {sorted(self._served)})",
                kind=FailureKind.POLICY_ERROR,
            ) from None

    def payload(self, prompt_ids: list[int], sampling: Sampling, name: str) -> dict[str, Any]:
        """The `/v1/completions` body for one sample."""
        for key in sampling.extra:
            if key in _REFUSED_EXTRA:
                raise SamplerError(f"sampling.extra[{key!r}] is not allowed: {_REFUSED_EXTRA[key]}")
        body: dict[str, Any] = {
            "model": name,
            "prompt": list(prompt_ids),
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            # 0 = only the sampled token's logprob.
            "logprobs": 0,
            "return_token_ids": True,
            # Special tokens (<|im_end|>, <tool_call>) must survive: the caller parses them.
            "skip_special_tokens": False,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if self.stop_token_ids:
            body["stop_token_ids"] = list(self.stop_token_ids)
        body.update(sampling.extra)
        return body

    async def generate(
        self, prompt_ids: list[int], sampling: Sampling, *, adapter: str | None = None
    ) -> Generation:
        """Sample one continuation of `prompt_ids` through `adapter` (None: the base adapter)."""
        if self._closed:
            raise VLLMRequestError("the vLLM sampler is closed")
        if not prompt_ids:
            raise VLLMRequestError("empty prompt", kind=FailureKind.POLICY_ERROR)
        name = self.server_name(adapter)
        body = self.payload(prompt_ids, sampling, name)
        if self.record_payloads:
            self.sent.append(body)
        self._in_flight[name] = self._in_flight.get(name, 0) + 1
        try:
            data = await self._post_json("/v1/completions", body)
        finally:
            self._in_flight[name] -= 1
            if self._in_flight[name] == 0:
                del self._in_flight[name]
                if name in self._retired:
                    await self._unload_retired(name)
        return self._parse(data, name)

    @staticmethod
    def _parse(data: Any, name: str) -> Generation:
        try:
            choice = data["choices"][0]
            ids = choice["token_ids"]
            lp = choice["logprobs"]["token_logprobs"]
            finish = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError) as exc:
            raise VLLMRequestError(
                f"unexpected /v1/completions reply for {name!r} (missing {exc}): the server "
                "must be vLLM with `return_token_ids` and `logprobs` support (vLLM >= 0.10.2)",
                kind=FailureKind.POLICY_ERROR,
            ) from None
        if ids is None or lp is None or len(ids) != len(lp):
            raise VLLMRequestError(
                f"vLLM returned {len(ids or [])} token ids but {len(lp or [])} logprobs",
                kind=FailureKind.POLICY_ERROR,
            )
        # "length": max_tokens or the context ran out. Anything else that ended a reply early
        # ("abort") is reported as "length" too: the reply is cut, never a clean stop.
        reason = "stop" if finish == "stop" else "length"
        return Generation(
            token_ids=list(ids),
            logprobs=[float(x) if x is not None else float("-inf") for x in lp],
            finish_reason=reason,
        )

    async def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        url = self.base_url + path

        async def attempt() -> Any:
            try:
                resp = await self._client.post(url, json=body)
            except httpx.TimeoutException as exc:
                raise AttemptError(
                    f"vLLM at {self.base_url} did not answer in time ({type(exc).__name__})",
                    kind=FailureKind.POLICY_TIMEOUT,
                    retryable=True,
                ) from None
            except httpx.TransportError as exc:
                raise AttemptError(
                    f"vLLM at {self.base_url} is unreachable ({type(exc).__name__}: {exc}); "
                    "is the server running?",
                    retryable=True,
                ) from None
            if resp.status_code == 200:
                try:
                    return resp.json()
                except ValueError:
                    raise AttemptError(
                        f"vLLM at {self.base_url} returned non-JSON: {resp.text[:200]!r}"
                    ) from None
            status = resp.status_code
            raise AttemptError(
                f"vLLM {path} answered {status}: {_error_detail(resp)}",
                kind=FailureKind.RATE_LIMITED if status == 429 else FailureKind.HTTP_ERROR,
                status=status,
                # A client error does not get better by retrying.
                retryable=status >= 500 or status == 429,
            )

        return await self._retry.run(attempt, error=_request_error, count_attempts=False)

    async def warmup(self, prompt_ids: list[int], batch_sizes: tuple[int, ...] = (1, 4)) -> None:
        """Send a few batches so the first real step is not paying vLLM's first-batch cost."""
        sampling = Sampling(max_tokens=4, temperature=1.0, seed=0)
        for n in batch_sizes:
            await asyncio.gather(*(self.generate(prompt_ids, sampling) for _ in range(n)))

    # ----------------------------------------------------------------- adapters

    async def load_base_adapter(self, path: str) -> str:
        """Load the all-zero adapter that stands in for the base model (`adapter=None`)."""
        return await self.load_adapter_versioned(self.BASE, path)

    async def load_adapter(self, name: str, path: str) -> None:
        """Make the PEFT adapter at `path` (a directory the server can read) available as `name`.

        Loading `name` again registers the new files under a fresh server-side name, so no
        cached prefix computed with the old weights can be served for it.
        """
        await self.load_adapter_versioned(name, path)

    async def load_adapter_versioned(self, name: str, path: str) -> str:
        """`load_adapter`, returning the server-side name it used."""
        async with self._lock:
            version = self._versions.get(name, 0) + 1
            served = f"{name}@{self.tag}-{version}"
            await self._adapter_call(
                "/v1/load_lora_adapter",
                {"lora_name": served, "lora_path": str(path)},
                name,
                path,
            )
            self._versions[name] = version
            old = self._served.get(name)
            self._served[name] = served
            if old is not None:
                self._retired.add(old)
                if not self._in_flight.get(old):
                    await self._unload_retired(old)
            return served

    async def unload_adapter(self, name: str) -> None:
        """Forget adapter `name` (no error if unknown); in-flight requests finish first."""
        async with self._lock:
            served = self._served.pop(name, None)
            if served is None:
                return
            self._retired.add(served)
            if not self._in_flight.get(served):
                await self._unload_retired(served)

    async def _unload_retired(self, served: str) -> None:
        self._retired.discard(served)
        try:
            await self._adapter_call("/v1/unload_lora_adapter", {"lora_name": served}, served, None)
        except Exception as exc:  # never let cleanup mask a generation's result
            # A stale adapter left loaded costs a cache slot, never correctness: new requests
            # use the new name. Say so and carry on.
            log.warning("could not unload stale adapter %s: %s", served, exc)

    async def _adapter_call(
        self, path: str, body: dict[str, Any], name: str, adapter_path: str | None
    ) -> None:
        what = "load" if adapter_path is not None else "unload"
        try:
            resp = await self._client.post(self.base_url + path, json=body)
        except httpx.HTTPError as exc:
            raise AdapterLoadError(
                f"could not {what} adapter {name!r}: vLLM at {self.base_url} is unreachable "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        if resp.status_code == 200:
            return
        detail = _error_detail(resp)
        hint = ""
        if resp.status_code == 404 and detail == "Not Found":
            # The route itself is missing (vLLM answers a bad adapter path with 404 too,
            # but with its own error message).
            hint = (
                " (is the server started with --enable-lora and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True?)"
            )
        elif adapter_path is not None:
            hint = (
                " (the path must be a PEFT adapter directory the server can read, "
                "with rank <= the server's --max-lora-rank)"
            )
        where = f" from {adapter_path!r}" if adapter_path is not None else ""
        raise AdapterLoadError(
            f"vLLM could not {what} adapter {name!r}{where}: {resp.status_code} {detail}{hint}"
        )

    @property
    def adapters(self) -> dict[str, str]:
        """Logical adapter name -> the server-side name requests use now."""
        return dict(self._served)

    async def aclose(self) -> None:
        """Unload this sampler's adapters (best effort) and close the HTTP client.

        The server itself is not stopped: `VLLMServer` owns it. Safe to call twice.
        """
        if self._closed:
            return
        self._closed = True
        names = [*self._served.values(), *self._retired]
        self._served.clear()
        self._retired.clear()
        for served in names:
            with contextlib.suppress(httpx.HTTPError):
                await self._client.post(
                    self.base_url + "/v1/unload_lora_adapter",
                    json={"lora_name": served},
                    timeout=5.0,
                )
        await self._client.aclose()


def _error_detail(resp: httpx.Response) -> str:
    """The server's error message, short, without echoing request bodies."""
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300]
    if isinstance(data, dict):
        if "error" not in data and "detail" in data:  # FastAPI's own errors (unknown route)
            return str(data["detail"])[:300]
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:300]
        return str(err)[:300]
    return str(data)[:300]


@contextlib.asynccontextmanager
async def open_vllm_sampler(
    model: str,
    *,
    url: str | None = None,
    server: VLLMServerConfig | None = None,
    stop_token_ids: list[int] | frozenset[int] | None = None,
    base_adapter: str | None = None,
    work_dir: str | None = None,
    warmup_prompt: list[int] | None = None,
) -> AsyncIterator[VLLMSampler]:
    """A ready `VLLMSampler`: the server at `url`, or one started from `server`.

    The base (all-zero) adapter is loaded first, so `adapter=None` never reaches the bare
    base model (trap 1); it is built with PEFT into `work_dir` (a temporary directory by
    default) unless `base_adapter` names one. With `url`, that directory must be readable by
    the server: same machine or a shared filesystem. The served model name is the first
    one `/v1/models` lists. A server started here is stopped on exit.
    """
    from agentrft.backends.local.inference.vllm_adapters import make_zero_adapter

    started: VLLMServer | None = None
    if url:
        names = await asyncio.to_thread(check_server, url)
        base_url, served = url.rstrip("/"), (names[0] if names else model)
    else:
        if server is None:
            server = VLLMServerConfig(model=model)
        started = VLLMServer(server)
        started.launch()  # from this thread: the server ends when it does
        try:
            await asyncio.to_thread(started.wait_ready)
        except BaseException:
            started.stop()
            raise
        base_url, served = started.url, started.model_name
    tmp = None if (base_adapter or work_dir) else tempfile.TemporaryDirectory(prefix="agentrft-")
    sampler = VLLMSampler(base_url, served, stop_token_ids=stop_token_ids)
    try:
        if base_adapter is None:
            root = Path(work_dir or tmp.name)  # type: ignore[union-attr]
            rank = min(8, server.max_lora_rank) if server else 8
            base_adapter = str(
                await asyncio.to_thread(make_zero_adapter, model, root / "zero", rank=rank)
            )
        await sampler.load_base_adapter(base_adapter)
        if warmup_prompt:
            await sampler.warmup(warmup_prompt)
        yield sampler
    finally:
        await sampler.aclose()
        if started is not None:
            await asyncio.to_thread(started.stop)
        if tmp is not None:
            tmp.cleanup()
