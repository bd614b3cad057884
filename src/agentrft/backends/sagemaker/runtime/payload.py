"""The rollout payload the managed service POSTs to the runtime's /invocations.

```
{"prompt": "<the dataset row's prompt string>",
 "metadata": {"jobArn": "arn:aws:sagemaker:...:job/AgentRFT/<name>", "rolloutId": "r1"},
 "inferenceParams": {"temperature": 1.0, "max_tokens": 4096, "top_p": 1.0}}    # optional
```

`inferenceParams` (or `inference_params`; keys snake_case or camelCase) are the job's sampling
settings: the policy request carries exactly the ones it sets, and none when it is absent,
so the job's own settings (its recipe, `sampling_max_tokens`, ...) apply. That is what the
SageMaker SDK's adapters do; inventing defaults here would cut every turn at a length the
job never asked for.

The SageMaker SDK also accepts `endpoint`, `region`, `job_arn`, `trajectory_id` (and
`trajectoryId`) in metadata; so do we. The job-runtime endpoint is `metadata.endpoint`, else
`RFT_RUNTIME_ENDPOINT`, else `https://job-runtime.sagemaker.<region>.api.aws`; the region is
`metadata.region`, else `AWS_REGION` (else `AWS_DEFAULT_REGION`, else the job ARN's region).

Credentials go only to the job runtime: the endpoint, wherever it came from, must be
`https://job-runtime[.<stage>].sagemaker.<region>.api.aws`, exactly the operator's
`RFT_RUNTIME_ENDPOINT`, or loopback (127.0.0.1, [::1], localhost) for local runs. Any other
(plain http, the instance-metadata address, `host@evil`, an odd port or a path) is a payload
problem: the rollout is not played and not reported, so neither the bearer token (which
carries the access key id and session token) nor a SigV4 signature leaves the process.

Parsing never raises: whatever is wrong lands in `problems`, and the runtime still answers
with a reward.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from agentrft.policy import Sampling

#: Endpoint template of the job runtime [model: botocore sagemakerjobruntime endpoint rules].
ENDPOINT_TEMPLATE = "https://job-runtime.sagemaker.{region}.api.aws"
ENDPOINT_ENV = "RFT_RUNTIME_ENDPOINT"
#: Path of the OpenAI-compatible policy endpoint under the job runtime [sample, sdk].
CHAT_COMPLETIONS_PATH = "/v1/chat/completions"
#: The model name the job runtime serves the policy under [sample].
POLICY_MODEL = "default"
JOB_ARN_HEADER = "X-Amzn-SageMaker-Job-Arn"
TRAJECTORY_HEADER = "X-Amzn-SageMaker-Trajectory-Id"

#: The only hosts that get credentials: the job runtime (stage like `beta`, region like
#: `us-gov-west-1`), https, no user info, port 443 at most, no path. ASCII classes only, no
#: IGNORECASE: case folding would let `ſ` (long s) or `K` (Kelvin) stand in for a letter
#: (an all-ASCII endpoint is lower-cased before it is matched; see `_ascii_lower`).
_JOB_RUNTIME_ENDPOINT = re.compile(
    r"https://job-runtime(?:\.[a-z][a-z0-9]{0,15})?\.sagemaker\."
    r"[a-z]{2,4}(?:-[a-z]+)+-[0-9]{1,2}\.api\.aws(?::443)?/?"
)
#: Local runs (the loopback fake job runtime, a runtime under test): any port, http or https.
_LOOPBACK_ENDPOINT = re.compile(r"https?://(?:127\.0\.0\.1|\[::1\]|localhost)(?::[0-9]{1,5})?/?")
#: Deepest nesting a payload may have (the service's payload nests 2 levels; a decoded row
#: a few more).
MAX_PAYLOAD_NESTING = 64

# botocore's JobArn pattern for the job runtime (sagemakerjobruntime 2026-02-01).
_JOB_ARN = re.compile(
    r"^arn:aws[a-z\-]*:sagemaker:(?P<region>[a-z0-9\-]*):(?P<account>[0-9]{12}):"
    r"job/[a-zA-Z0-9_\-]+/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
)

#: The policy request's fields that `inferenceParams` may set, and nothing else may.
SAMPLING_FIELDS = ("temperature", "top_p", "max_tokens")

# inferenceParams key spellings seen in the SDK (snake_case and camelCase); the SDK's
# adapter reads snake_case first, then camelCase.
_PARAM_KEYS = {
    "temperature": ("temperature",),
    "top_p": ("top_p", "topP"),
    "max_tokens": ("max_tokens", "maxTokens"),
}


@dataclass
class RolloutPayload:
    """What one invocation asks for, resolved; `problems` lists what was wrong with it."""

    prompt: str | None = None
    job_arn: str | None = None
    trajectory_id: str | None = None
    region: str | None = None
    endpoint: str | None = None
    #: The sampling fields `inferenceParams` set (policy-request names), and only those.
    inference_params: dict[str, float | int] = field(default_factory=dict)
    diagnose: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def can_report(self) -> bool:
        """Whether CompleteRollout / UpdateReward can be addressed at all."""
        return bool(self.job_arn and self.trajectory_id and self.endpoint and self.region)

    @property
    def can_play(self) -> bool:
        """Whether the policy model can be reached for this rollout."""
        return self.prompt is not None and self.can_report

    @property
    def sampling(self) -> Sampling:
        """`Sampling` for the agent loop: the job's values where it set them.

        Only `inference_params` reach the policy request (see `JobRuntimePolicy`); the
        other fields here are placeholders the request never carries.
        """
        return Sampling(**self.inference_params)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (`{endpoint}/v1`)."""
        return f"{(self.endpoint or '').rstrip('/')}/v1"

    def headers(self) -> dict[str, str]:
        """The two `X-Amzn-SageMaker-*` headers every policy request carries."""
        out = {}
        if self.job_arn:
            out[JOB_ARN_HEADER] = self.job_arn
        if self.trajectory_id:
            out[TRAJECTORY_HEADER] = self.trajectory_id
        return out


def endpoint_for(region: str) -> str:
    return ENDPOINT_TEMPLATE.format(region=region)


def endpoint_allowed(endpoint: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the runtime may send its bearer token and signed reports to `endpoint`.

    True for the job runtime's own shape, for exactly `$RFT_RUNTIME_ENDPOINT` (the
    operator's choice), and for loopback; False for everything else.
    """
    env = os.environ if environ is None else environ
    operator = (env.get(ENDPOINT_ENV) or "").strip().rstrip("/")
    if operator and endpoint.rstrip("/") == operator:
        return True
    return _known_shape(_ascii_lower(endpoint))


def _ascii_lower(endpoint: str) -> str:
    """`endpoint` lower-cased if it is all ASCII (host names are case-insensitive). A
    non-ASCII letter is kept as it is: the Kelvin sign lower-cases to `k`, and must still
    be refused."""
    return endpoint.lower() if endpoint.isascii() else endpoint


def _known_shape(endpoint: str) -> bool:
    return bool(_JOB_RUNTIME_ENDPOINT.fullmatch(endpoint) or _LOOPBACK_ENDPOINT.fullmatch(endpoint))


def shown_endpoint(endpoint: str) -> str:
    """`endpoint` fit for a log line: no user info, no query, bounded, quoted."""
    try:
        parts = urlsplit(endpoint)
        host = parts.netloc.rpartition("@")[2]
        text = f"{parts.scheme}://{host}{parts.path}" if parts.scheme else endpoint.split("?")[0]
        hidden = " (user info not shown)" if "@" in parts.netloc else ""
    except ValueError:
        text, hidden = endpoint, ""
    if len(text) > 100:
        text = text[:100] + "..."
    return repr(text) + hidden


def job_arn_parts(job_arn: str) -> tuple[str, str] | None:
    """(region, account) of a job ARN, or None when it is not one."""
    m = _JOB_ARN.match(job_arn or "")
    return (m.group("region"), m.group("account")) if m else None


def parse_payload(raw: Any, environ: Mapping[str, str] | None = None) -> RolloutPayload:
    """Resolve a raw /invocations body; never raises."""
    env = os.environ if environ is None else environ
    out = RolloutPayload()
    if not isinstance(raw, Mapping):
        out.problems.append(
            f"payload is a {type(raw).__name__}, expected a JSON object with 'prompt' and "
            "'metadata'"
        )
        return out
    if _nests_deeper(raw, MAX_PAYLOAD_NESTING):
        out.problems.append(f"payload nests deeper than {MAX_PAYLOAD_NESTING} levels")
        return out
    out.diagnose = raw.get("diagnose") is True
    out.prompt = _prompt(raw, out.problems)

    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
        out.problems.append("payload has no 'metadata' (jobArn, rolloutId)")
    elif not isinstance(metadata, Mapping):
        out.problems.append(f"'metadata' is a {type(metadata).__name__}, expected an object")
        metadata = {}

    out.job_arn = _first_str(metadata, "jobArn", "job_arn")
    out.trajectory_id = _first_str(metadata, "rolloutId", "trajectory_id", "trajectoryId")
    if not out.job_arn:
        out.problems.append("metadata has no 'jobArn'")
    elif job_arn_parts(out.job_arn) is None:
        out.problems.append(f"metadata.jobArn {out.job_arn!r} is not a SageMaker job ARN")
    if not out.trajectory_id:
        out.problems.append("metadata has no 'rolloutId'")

    arn_region = (job_arn_parts(out.job_arn or "") or (None, None))[0]
    out.region = (
        _first_str(metadata, "region")
        or env.get("AWS_REGION")
        or env.get("AWS_DEFAULT_REGION")
        or arn_region
    )
    out.endpoint = _first_str(metadata, "endpoint") or env.get(ENDPOINT_ENV) or None
    if out.endpoint is None and out.region:
        out.endpoint = endpoint_for(out.region)
    if not out.region:
        out.problems.append("no region: set metadata.region or AWS_REGION")
    if out.endpoint:
        out.endpoint = out.endpoint.rstrip("/")
        if _known_shape(_ascii_lower(out.endpoint)):
            out.endpoint = _ascii_lower(out.endpoint)  # one spelling for every request
        # Checked whatever its source: a payload's metadata.region shapes the default too.
        if not endpoint_allowed(out.endpoint, env):
            out.problems.append(
                f"endpoint {shown_endpoint(out.endpoint)} is not the job runtime "
                "(https://job-runtime[.<stage>].sagemaker.<region>.api.aws), "
                f"${ENDPOINT_ENV} or loopback; nothing was sent"
            )
            out.endpoint = None

    params = raw.get("inferenceParams", raw.get("inference_params"))
    out.inference_params = _inference_params(params, out.problems)
    return out


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether `value` nests lists/objects deeper than `limit` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def _prompt(raw: Mapping[str, Any], problems: list[str]) -> str | None:
    prompt = raw.get("prompt")
    if prompt is None and isinstance(raw.get("instance"), Mapping):
        # The SDK's generic rollout request carries the row as `instance`.
        inner = raw["instance"].get("prompt")
        prompt = inner if isinstance(inner, str) else raw["instance"]
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (Mapping, list)):
        # A row whose prompt column was decoded into an object: hand the task its JSON text.
        return json.dumps(prompt)
    if prompt is None:
        problems.append("payload has no 'prompt'")
    else:
        problems.append(f"'prompt' is a {type(prompt).__name__}, expected a string")
    return None


def _first_str(mapping: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def _inference_params(params: Any, problems: list[str]) -> dict[str, float | int]:
    """The sampling fields `inferenceParams` sets; {} when it is absent or unusable."""
    out: dict[str, float | int] = {}
    if params is None:
        return out
    if not isinstance(params, Mapping):
        problems.append(f"'inferenceParams' is a {type(params).__name__}, expected an object")
        return out
    for name, keys in _PARAM_KEYS.items():
        value = next((params[k] for k in keys if params.get(k) is not None), None)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            problems.append(f"inferenceParams.{keys[0]}={_shown(value)} is not a number; ignored")
            continue
        out[name] = int(value) if name == "max_tokens" else float(value)
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
