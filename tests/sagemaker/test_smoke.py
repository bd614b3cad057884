"""`agentrft smoke-test` against botocore's Stubber (no network): each outcome explained."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from agentrft.backends.sagemaker.jobs.smoke import (
    parse_runtime_arn,
    run_smoke_test,
    smoke_payload,
    task_from_runtime,
)

ARN = "arn:aws:bedrock-agentcore:us-east-1:111122223333:runtime/agentrft_wordle-AbCdE12345"
ACCOUNT = "111122223333"
PROMPT = '{"prompt": "Guess the 5-letter word", "answer": "ratio", "id": "wordle_train_0000"}'


def client(service: str) -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="fake",
    )


def invoke_ok(answer: Any) -> dict[str, Any]:
    raw = json.dumps(answer).encode()
    return {
        "response": StreamingBody(io.BytesIO(raw), len(raw)),
        "contentType": "application/json",
        "statusCode": 200,
    }


def expected_params() -> dict[str, Any]:
    return {
        "agentRuntimeArn": ARN,
        "runtimeSessionId": ANY,
        "payload": ANY,
        "contentType": "application/json",
        "accept": "application/json",
    }


def smoke(answer: Any = None, error: tuple[str, int, str] | None = None) -> tuple[Any, Any]:
    agentcore = client("bedrock-agentcore")
    with Stubber(agentcore) as stub:
        if error:
            code, status, message = error
            stub.add_client_error(
                "invoke_agent_runtime",
                service_error_code=code,
                service_message=message,
                http_status_code=status,
                expected_params=expected_params(),
            )
        else:
            stub.add_response("invoke_agent_runtime", invoke_ok(answer), expected_params())
        result = run_smoke_test(
            agentcore, runtime_arn=ARN, prompt=PROMPT, account=ACCOUNT, lowest=-1.5
        )
        stub.assert_no_pending_responses()
    return result, "\n".join(result.lines)


def no_job_answer() -> dict[str, Any]:
    return {
        "reward": -1.5,
        "diagnostics": {
            "problems": [],
            "model_reached": False,
            "failures": [
                "http_error: HTTP 400 from POST .../chat/completions: Could not find job."
            ],
            "reports": [
                {
                    "operation": "CompleteRollout",
                    "ok": False,
                    "status": 400,
                    "code": "ValidationException",
                    "message": "Could not find job.",
                }
            ],
        },
    }


def test_payload_is_the_smoke_payload_with_the_callers_account() -> None:
    body = smoke_payload(PROMPT, "us-east-1", "444455556666")
    assert body["prompt"] == PROMPT  # the row's prompt string, untouched
    assert body["metadata"] == {
        "jobArn": "arn:aws:sagemaker:us-east-1:444455556666:job/AgentRFT/smoke-test",
        "rolloutId": "r1",
    }


def test_could_not_find_job_and_the_lowest_reward_mean_the_chain_works() -> None:
    agentcore = client("bedrock-agentcore")
    with Stubber(agentcore) as stub:
        stub.add_response("invoke_agent_runtime", invoke_ok(no_job_answer()), expected_params())
        seen: dict[str, Any] = {}
        real = agentcore.invoke_agent_runtime

        def spy(**kwargs: Any) -> Any:
            seen.update(kwargs)
            return real(**kwargs)

        agentcore.invoke_agent_runtime = spy
        result = run_smoke_test(
            agentcore, runtime_arn=ARN, prompt=PROMPT, account=ACCOUNT, lowest=-1.5
        )
    assert result.ok and result.reward == -1.5
    assert "chain works" in result.lines[-1]
    assert len(seen["runtimeSessionId"]) >= 33
    sent = json.loads(seen["payload"])
    assert sent["metadata"]["jobArn"].split(":")[4] == ACCOUNT
    assert sent["prompt"] == PROMPT


def test_403_inside_the_runtime_means_the_wrong_account() -> None:
    answer = no_job_answer()
    answer["diagnostics"]["reports"][0].update(
        status=403, code="AccessDeniedException", message="User is not authorized"
    )
    answer["diagnostics"]["failures"] = []
    result, text = smoke(answer)
    assert not result.ok
    assert "403" in text and "account" in text


def test_403_from_invoke_explains_permissions_and_account() -> None:
    result, text = smoke(error=("AccessDeniedException", 403, "not authorized"))
    assert not result.ok and result.reward is None
    assert "InvokeAgentRuntime" in text and "account" in text


def test_runtime_client_error_points_at_the_logs() -> None:
    result, text = smoke(error=("RuntimeClientError", 424, "runtime failed"))
    assert not result.ok and "CloudWatch" in text


def test_an_answer_without_reward_fails() -> None:
    result, text = smoke({"result": "hello"})
    assert not result.ok and "no 'reward'" in text


def test_a_reward_other_than_the_lowest_is_suspicious() -> None:
    answer = no_job_answer()
    answer["reward"] = 1.2
    result, text = smoke(answer)
    assert not result.ok and "expected the lowest reward" in text


def test_a_runtime_without_diagnostics_is_probably_ok() -> None:
    result, text = smoke({"reward": -1.5})
    assert result.ok and "PROBABLY OK" in text


def test_bad_runtime_arn_is_explained() -> None:
    with pytest.raises(ValueError, match="not an AgentCore runtime ARN"):
        parse_runtime_arn("arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/x")
    assert parse_runtime_arn(ARN) == ("us-east-1", ACCOUNT, "agentrft_wordle-AbCdE12345")


def test_task_comes_from_the_runtime_env_else_its_name() -> None:
    control = client("bedrock-agentcore-control")
    base = {
        "agentRuntimeArn": ARN,
        "agentRuntimeName": "agentrft_wordle",
        "agentRuntimeId": "agentrft_wordle-AbCdE12345",
        "agentRuntimeVersion": "1",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "roleArn": "arn:aws:iam::111122223333:role/rt",
        "status": "READY",
        "lifecycleConfiguration": {},
    }
    with Stubber(control) as stub:
        stub.add_response(
            "get_agent_runtime",
            {**base, "environmentVariables": {"AGENTRFT_TASK": "expense_report"}},
            {"agentRuntimeId": "agentrft_wordle-AbCdE12345"},
        )
        assert task_from_runtime(control, "agentrft_wordle-AbCdE12345") == "expense_report"
        stub.add_client_error("get_agent_runtime", "AccessDeniedException", http_status_code=403)
        assert task_from_runtime(control, "agentrft_wordle-AbCdE12345") == "wordle"


# --- the command ------------------------------------------------------------------------------


class StubbedSession:
    """boto3.Session stand-in handing out pre-stubbed clients by service name."""

    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients

    def __call__(self, *args: Any, **kwargs: Any) -> StubbedSession:
        return self

    def client(self, service: str, **kwargs: Any) -> Any:
        return self.clients[service]


def test_smoke_test_command_exit_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agentrft_wordle")
    import typer
    from typer.testing import CliRunner

    from agentrft.backends.sagemaker.cli import runtime as runtime_cli

    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """test app"""

    runtime_cli.register(app)

    for answer, code, needle in [
        (no_job_answer(), 0, "The chain works"),
        ({"result": "no reward"}, 1, "no 'reward'"),
    ]:
        sts, agentcore = client("sts"), client("bedrock-agentcore")
        with Stubber(sts) as s, Stubber(agentcore) as a:
            s.add_response(
                "get_caller_identity",
                {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/me", "UserId": "AIDA"},
            )
            a.add_response("invoke_agent_runtime", invoke_ok(answer), expected_params())
            session = StubbedSession({"sts": sts, "bedrock-agentcore": agentcore})
            monkeypatch.setattr(boto3, "Session", session)
            result = CliRunner().invoke(
                app, ["smoke-test", "--runtime-arn", ARN, "--task", "wordle"]
            )
        assert result.exit_code == code, result.output
        assert needle in result.output
