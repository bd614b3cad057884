"""Turn a `--policy` string into a `Policy`.

Accepted specs:

- `expert`: the task's scripted expert (`Task.expert()`);
- `openai:MODEL`: an OpenAI-compatible server (`base_url`, else `$OPENAI_BASE_URL`, else
  OpenAI itself), key from `api_key`, else `$OPENAI_API_KEY`, else "EMPTY" (vLLM ignores it);
- `http(s)://host:port/v1`: an OpenAI-compatible server at that URL; the model is `model`,
  else the first entry of the server's `/v1/models`. A `user:password@` in the URL is sent
  as HTTP Basic auth unless `api_key` is given (then the key is; see `OpenAIPolicy`);
- `litellm:PROVIDER/MODEL`: any provider litellm knows (frontier-model baselines).

Client modules import lazily, so resolving `expert` never loads the `openai` SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agentrft.policies.urls import safe_url, split_userinfo
from agentrft.policy import Policy

SPEC_HELP = (
    "expert, openai:MODEL, an OpenAI-compatible URL such as http://localhost:8000/v1, "
    "or litellm:PROVIDER/MODEL"
)


OPENAI_URL = "https://api.openai.com/v1"


class PolicySpecError(ValueError):
    """A `--policy` spec cannot be resolved; the message says which forms are accepted."""


def resolve_policy(
    spec: str,
    task: Any,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    model: str | None = None,
) -> Policy:
    """The policy named by `spec` for `task` (see the module docstring for the forms)."""
    spec = spec.strip()
    if spec == "expert":
        expert = task.expert()
        if expert is None:
            raise PolicySpecError(
                f"task {task.name!r} has no expert policy; use {SPEC_HELP.split(', ', 1)[1]}"
            )
        return expert
    if spec.startswith("openai:"):
        name = spec.removeprefix("openai:")
        if not name:
            raise PolicySpecError("policy 'openai:' needs a model name, e.g. openai:gpt-4o-mini")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        return _openai(url, name, api_key, headers)
    if spec.startswith(("http://", "https://")):
        url = spec.rstrip("/")
        name = model or first_served_model(url, _key(api_key, url), headers)
        return _openai(url, name, api_key, headers)
    if spec.startswith("litellm:"):
        name = spec.removeprefix("litellm:")
        if "/" not in name:
            raise PolicySpecError(
                f"policy {spec!r}: litellm models are PROVIDER/MODEL, e.g. "
                f"litellm:anthropic/claude-sonnet-4-5"
            )
        from agentrft.policies.litellm_client import LiteLLMPolicy

        kwargs: dict[str, Any] = {"model": name}
        if base_url:
            kwargs["api_base"] = base_url
        if api_key:
            kwargs["api_key"] = api_key
        if headers:
            kwargs["headers"] = dict(headers)
        return LiteLLMPolicy(**kwargs)
    raise PolicySpecError(f"unknown policy {spec!r}; use {SPEC_HELP}")


def _key(api_key: str | None, url: str) -> str | None:
    """The bearer key: `api_key`, else none if the URL carries user:password (they are the
    credentials then), else `$OPENAI_API_KEY`, else "EMPTY"."""
    if api_key:
        return api_key
    if split_userinfo(url)[1] is not None:
        return None
    return os.environ.get("OPENAI_API_KEY") or "EMPTY"


def _openai(
    base_url: str, model: str, api_key: str | None, headers: Mapping[str, str] | None
) -> Policy:
    from agentrft.policies.openai_client import OpenAIPolicy

    return OpenAIPolicy(
        model,
        base_url,
        api_key=_key(api_key, base_url),
        headers=dict(headers) if headers else None,
    )


def first_served_model(
    base_url: str,
    api_key: str | None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> str:
    """The first model id listed by an OpenAI-compatible server's `/models`.

    Sent with `Authorization: Bearer <api_key>`, else with the URL's user:password as Basic
    auth (the rule `OpenAIPolicy` follows).
    """
    import httpx

    bare, basic_auth = split_userinfo(base_url.rstrip("/"))
    url = bare + "/models"
    shown = safe_url(url)  # errors never carry user:password@
    auth = f"Bearer {api_key}" if api_key else basic_auth
    all_headers = {**({"Authorization": auth} if auth else {}), **dict(headers or {})}
    try:
        response = httpx.get(url, headers=all_headers, timeout=timeout)
        response.raise_for_status()
        models = [m["id"] for m in response.json().get("data", [])]
    except httpx.HTTPStatusError as exc:
        raise PolicySpecError(
            f"{shown} answered HTTP {exc.response.status_code}; pass the model name with --model"
        ) from None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PolicySpecError(
            f"could not list models at {shown} ({type(exc).__name__}: {exc}); check the URL "
            f"(it usually ends in /v1) or pass the model name with --model"
        ) from None
    if not models:
        raise PolicySpecError(f"{shown} lists no models; pass the model name with --model")
    return models[0]
