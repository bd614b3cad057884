"""The runtime's process entry point and the payload parser (no server, no network)."""

from __future__ import annotations

import pytest

from agentrft.backends.sagemaker.runtime import main as runtime_main
from agentrft.backends.sagemaker.runtime.payload import parse_payload

JOB = "arn:aws:sagemaker:us-west-2:111122223333:job/AgentRFT/run-1"


def test_binds_loopback_unless_inside_the_container() -> None:
    assert runtime_main.resolve_host(None, {}) == "127.0.0.1"
    assert runtime_main.resolve_host(None, {"AGENTRFT_BIND_ALL": "1"}) == "0.0.0.0"
    assert runtime_main.resolve_host("10.0.0.5", {"AGENTRFT_BIND_ALL": "1"}) == "10.0.0.5"


def test_main_without_a_task_says_how_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTRFT_TASK", raising=False)
    with pytest.raises(SystemExit, match="agentrft deploy --task"):
        runtime_main.main()


def test_main_serves_the_task_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}
    monkeypatch.setenv("AGENTRFT_TASK", "wordle")
    monkeypatch.setenv("AGENTRFT_REWARD", "")
    monkeypatch.setenv("AGENTRFT_BIND_ALL", "")  # recorded, so main()'s setdefault is undone
    monkeypatch.delenv("AGENTRFT_BIND_ALL")
    monkeypatch.setattr(
        runtime_main, "serve_forever", lambda task, **kw: seen.update(task=task, **kw)
    )
    runtime_main.main()
    assert seen == {"task": "wordle", "port": 8080, "reward": None}
    assert runtime_main.resolve_host(None) == "0.0.0.0"  # main() marks the container


def test_the_entrypoint_is_registered_and_ping_exists() -> None:
    pytest.importorskip("agentrft_wordle")
    app = runtime_main.load_app("wordle")
    assert app.handlers["main"].__name__ == "invocations"  # @app.entrypoint is outermost
    assert {r.path for r in app.routes} >= {"/invocations", "/ping"}


def test_unknown_task_names_the_installed_ones() -> None:
    from agentrft.plugins import PluginError

    with pytest.raises(PluginError, match="not found; installed"):
        runtime_main.load_app("no_such_task")


def test_payload_resolution_order() -> None:
    raw = {"prompt": "p", "metadata": {"jobArn": JOB, "rolloutId": "r1"}}
    p = parse_payload(raw, {"AWS_REGION": "eu-west-1"})
    assert (p.region, p.endpoint) == (
        "eu-west-1",
        "https://job-runtime.sagemaker.eu-west-1.api.aws",
    )
    p = parse_payload(raw, {"AWS_REGION": "eu-west-1", "RFT_RUNTIME_ENDPOINT": "http://x:1/"})
    assert p.endpoint == "http://x:1" and p.base_url == "http://x:1/v1"
    # metadata wins (a loopback one here: only the job runtime, the operator's
    # RFT_RUNTIME_ENDPOINT and loopback get credentials; tests/faults covers the refusals)
    raw["metadata"].update(endpoint="http://127.0.0.1:2", region="ap-south-1")
    p = parse_payload(raw, {"AWS_REGION": "eu-west-1", "RFT_RUNTIME_ENDPOINT": "http://x:1"})
    assert (p.region, p.endpoint) == ("ap-south-1", "http://127.0.0.1:2")
    p = parse_payload({"prompt": "p", "metadata": {"jobArn": JOB, "rolloutId": "r1"}}, {})
    assert p.region == "us-west-2"  # last resort: the job ARN's own region
    assert p.can_play and not p.problems
    assert p.headers() == {
        "X-Amzn-SageMaker-Job-Arn": JOB,
        "X-Amzn-SageMaker-Trajectory-Id": "r1",
    }


def test_payload_problems_are_collected_not_raised() -> None:
    p = parse_payload(
        {
            "prompt": {"a": 1},
            "metadata": {"jobArn": "not-an-arn"},
            "inferenceParams": {"temperature": "hot"},
        },
        {"AWS_REGION": "us-east-1"},
    )
    assert p.prompt == '{"a": 1}'
    assert any("not a SageMaker job ARN" in x for x in p.problems)
    assert any("rolloutId" in x for x in p.problems)
    assert any("temperature" in x for x in p.problems)
    assert p.inference_params == {} and not p.can_report  # a bad value is not sent
    assert parse_payload(None).problems and parse_payload([1]).prompt is None
