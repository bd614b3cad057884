"""The aiohttp session `OpenAIPolicy`'s default transport posts through, and the
environment's proxy for its base URL (policies/openai_client.py says why aiohttp)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_CONNECTIONS", "aiohttp_session", "env_proxy"]

#: Connections one aiohttp session keeps open at once: the SDK's (httpx's) own limit.
MAX_CONNECTIONS = 1000


def aiohttp_session(headers: Mapping[str, str]) -> Any:
    """The aiohttp session `OpenAIPolicy` posts through: certifi's CA bundle (what httpx, and
    so the SDK, trusts), no timeout of its own (`complete` bounds each whole request with
    `within`; aiohttp's timer per request cost ~5% of the turns). Proxies come from `env_proxy`,
    read once: aiohttp's `trust_env` reads the environment and ~/.netrc on every request
    (at 64 episodes in flight that halved the turns per second)."""
    import ssl

    import aiohttp
    import certifi

    context = ssl.create_default_context(cafile=certifi.where())
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=context),
        timeout=aiohttp.ClientTimeout(total=None),  # see the docstring
        # Who is calling, as the SDK says `AsyncOpenAI/Python <version>`; the user's wins.
        headers={"Content-Type": "application/json", "User-Agent": _user_agent(), **headers},
    )


def _user_agent() -> str:
    # The installed distribution's version: importing the `agentrft` package from here
    # would put this module on an import circle.
    from importlib.metadata import PackageNotFoundError, version

    import aiohttp

    try:
        ours = version("agentrft")
    except PackageNotFoundError:  # run from a source tree that was never installed
        ours = "unknown"
    return f"agentrft/{ours} aiohttp/{aiohttp.__version__}"


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
    minus `NO_PROXY`), as httpx, and so the SDK, reads them; None for none."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    if not proxies or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")
