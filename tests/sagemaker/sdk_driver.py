"""Drives AWS's own SageMaker SDK for the conformance tests; runs in the SDK's venv.

Not a test module: `test_sdk_conformance.py` runs it with `.venv-sagemaker-sdk/bin/python`
(scripts/sagemaker_sdk_env.sh builds that venv; the SDK is no dependency of agentrft) and
compares what it prints with what agentrft does against the same fakes.

    python sdk_driver.py rollout < scenario.json      # the SDK's rollout handler + reward client
    python sdk_driver.py train < scenario.json        # MultiTurnRLTrainer.train(wait=False)

Both print one JSON object on stdout. Nothing leaves the machine: every socket connection
to anything but loopback is refused and listed under "blocked" (the SDK's telemetry is off
through its own config file, and this proves it sent nothing), and in `train` every AWS API
call is answered from canned responses after botocore's own model has validated it.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import json
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

BLOCKED: list[str] = []


def block_the_network() -> None:
    """Refuse every connection to a non-loopback address (and record the attempt)."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            BLOCKED.append(f"{host}:{address[1] if isinstance(address, tuple) else ''}")
            raise OSError(f"network blocked by the conformance driver: {host}")
        return original(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            if not ipaddress.ip_address(name).is_loopback:
                BLOCKED.append(name)
        except ValueError:
            if name != "localhost":
                BLOCKED.append(name)
                raise socket.gaierror(f"name resolution blocked by the driver: {name}") from None
        return real_getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def telemetry_off() -> None:
    """The SDK's documented opt-out: `TelemetryOptOut: true` in its defaults config."""
    path = Path(tempfile.mkdtemp(prefix="sdk-config-")) / "config.yaml"
    path.write_text(
        "SchemaVersion: '1.0'\nSageMaker:\n  PythonSDK:\n    Modules:\n      TelemetryOptOut: true\n"
    )
    os.environ["SAGEMAKER_USER_CONFIG_OVERRIDE"] = str(path)
    os.environ["SAGEMAKER_ADMIN_CONFIG_OVERRIDE"] = str(path)


# -- rollout: the SDK's handler, feedback client, headers and token -------------------------


class RecordingModel:
    """Stands in for a Strands `OpenAIModel` under the SDK's `wrap_model`.

    `wrap_model` injects the rollout headers into `client_args["default_headers"]` and the
    inference params into `config["params"]`, then calls `stream()`; this posts what an
    OpenAI client sends with those: the params given, nothing more.
    """

    def __init__(self, base_url: str, region: str) -> None:
        self.client_args: dict[str, Any] = {"base_url": base_url}
        self.config: dict[str, Any] = {"model_id": "default", "params": {}}
        self.region = region
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Open a door."}]

    def update_config(self, **config: Any) -> None:
        self.config.update(config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def stream(self) -> dict[str, Any]:
        import requests
        from sagemaker.core.token_generator import generate_token

        headers = dict(self.client_args.get("default_headers") or {})
        headers["Authorization"] = f"Bearer {generate_token(region=self.region)}"
        headers["Content-Type"] = "application/json"
        body = {"model": self.config["model_id"], "messages": self.messages}
        body.update(self.config.get("params") or {})
        response = requests.post(
            self.client_args["base_url"] + "/chat/completions",
            headers=headers,
            data=json.dumps(body),
            timeout=30,
        )
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        self.messages.append(message)
        for call in message.get("tool_calls") or []:
            self.messages.append(
                {"role": "tool", "tool_call_id": call.get("id") or "", "content": "Empty."}
            )
        return message


def rollout(scenario: dict[str, Any]) -> dict[str, Any]:
    from sagemaker.train.rft import sagemaker_rft_handler
    from sagemaker.train.rft.adapters.strands import wrap_model

    payload = scenario["payload"]
    metadata = payload.get("metadata") or {}
    region = metadata.get("region") or os.environ.get("AWS_REGION") or "us-west-2"
    base_url = metadata["endpoint"].rstrip("/") + "/v1"

    @sagemaker_rft_handler
    async def handler(body: dict[str, Any]) -> dict[str, Any]:
        model = wrap_model(RecordingModel(base_url, region))
        for _ in range(scenario["policy_calls"]):
            model.stream()
        return {"reward": scenario["reward"]}

    out: dict[str, Any] = {}
    try:
        out["answer"] = asyncio.run(handler(payload))
    except Exception as exc:  # the SDK re-raises after reporting the failure
        out["raised"] = f"{type(exc).__name__}: {exc}"
    return out


# -- train: MultiTurnRLTrainer against canned, model-validated AWS responses -----------------


def fake_aws(responses: dict[str, Any], calls: list[dict[str, Any]]) -> None:
    """Answer every botocore API call from `responses` ("service.Operation" -> a response,
    or a list of them answered in order, the last one repeated), after validating its parameters against botocore's model (the Stubber's check)."""
    import botocore.client
    from botocore.exceptions import ClientError, ParamValidationError
    from botocore.response import StreamingBody
    from botocore.validate import ParamValidator

    def make_api_call(self: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        service = self.meta.service_model.service_name
        shape = self.meta.service_model.operation_model(operation_name).input_shape
        report = ParamValidator().validate(api_params, shape)
        key = f"{service}.{operation_name}"
        calls.append(
            {
                "call": key,
                "params": json.loads(json.dumps(api_params, default=str)),
                "valid": not report.has_errors(),
            }
        )
        if report.has_errors():
            raise ParamValidationError(report=report.generate_report())
        if key not in responses:
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": f"{key}: not faked"}},
                operation_name,
            )
        answer = responses[key]
        if isinstance(answer, list):  # answered in order, one per call
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if isinstance(answer, dict) and "__error__" in answer:
            raise ClientError({"Error": answer["__error__"]}, operation_name)
        answer = json.loads(json.dumps(answer))
        if isinstance(answer, dict) and "__body__" in answer:
            data = answer.pop("__body__").encode()
            answer["Body"] = StreamingBody(io.BytesIO(data), len(data))
        return answer

    botocore.client.BaseClient._make_api_call = make_api_call  # type: ignore[method-assign]


def train(scenario: dict[str, Any]) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    fake_aws(scenario["responses"], calls)
    os.environ["SAGEMAKER_VALIDATE_ROLE"] = "false"  # its trust check refuses the documented role

    from sagemaker.train import MultiTurnRLTrainer

    args = scenario["trainer"]
    out: dict[str, Any] = {}
    try:
        trainer = MultiTurnRLTrainer(
            model=args["model"],
            agent_env=args["agent_env"],
            training_dataset=args["training_dataset"],
            validation_dataset=args.get("validation_dataset"),
            s3_output_path=args["s3_output_path"],
            mlflow_app_arn=args["mlflow_app_arn"],
            accept_eula=True,
            role=args["role"],
        )
        for name, value in scenario["hyperparameters"].items():
            setattr(trainer.hyperparameters, name, value)
        trainer.train(wait=False)
    except Exception as exc:
        out["raised"] = f"{type(exc).__name__}: {exc}"
    out["calls"] = calls
    return out


def main() -> None:
    command = sys.argv[1]
    scenario = json.loads(sys.stdin.read())
    block_the_network()
    telemetry_off()
    out = {"rollout": rollout, "train": train}[command](scenario)
    out["blocked"] = BLOCKED
    import importlib.metadata as md

    out["versions"] = {p: md.version(p) for p in ("sagemaker-train", "sagemaker-core")}
    sys.stdout.write(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
