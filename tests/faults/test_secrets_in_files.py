"""No secret reaches a file: a real `agentrft eval --report --trajectories` against a server
that echoes every credential back, and a tiny local training run configured with secrets;
then every byte of every file they wrote (the MLflow sqlite store included) is searched.

The secrets: a policy URL's password, an API key (from an environment variable whose name
does not say "key", so only the client's registration can catch it), a bearer token in a
header, an AWS access key id and an AWS secret key (from the environment).
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft.cli.app import app
from agentrft.redact import REDACTED, restore_redacted, scrub, scrub_json_line, scrub_text
from agentrft.testing import FakeOpenAIServer, http_error, sequence

URL_PASSWORD = "urlpw-Q7m2x9v4"
API_KEY = "echo-key-5d8e2b7c41"
BEARER = "tok-9a8b7c6d5e4f3a2b"
AWS_KEY_ID = "AKIAQ3EXAMPLE7SECRT1"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
SECRETS = (URL_PASSWORD, API_KEY, BEARER, AWS_KEY_ID, AWS_SECRET)
ECHO = (
    f"you sent key {API_KEY}, Authorization: Bearer {BEARER}, from "
    f"http://agent:{URL_PASSWORD}@proxy.internal/v1 as {AWS_KEY_ID} / {AWS_SECRET}"
)


def _files_with_secrets(root: Path) -> dict[str, list[str]]:
    """{file: [secrets in it]} for every file under `root`, read as bytes."""
    found: dict[str, list[str]] = {}
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, f"nothing was written under {root}"
    for path in files:
        data = path.read_bytes()
        hits = [s for s in SECRETS if s.encode() in data]
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


# -- eval --policy: the report and the trajectories --------------------------------------


def _eval(*args: str, env: dict[str, str]) -> Any:
    return CliRunner().invoke(app, ["eval", "--task", "find_number", *args], env=env)


def test_eval_report_and_trajectories_hold_no_secret(tiny_plugins, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {"COLUMNS": "200", "MY_EVAL_CRED": API_KEY, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}
    # A server that echoes the credentials in its replies and in an error message.
    script = sequence(ECHO, http_error(401, f"Incorrect key: {ECHO}"), then=lambda m, t: ECHO)
    with FakeOpenAIServer(script, model_name="m") as server:
        served = _eval(
            "--policy", "openai:m", "--base-url", server.base_url,
            "--api-key-env", "MY_EVAL_CRED", "--header", f"X-Trace=Bearer {BEARER}",
            "--set", "eval.n=3", "--report", str(out / "served.json"),
            "--trajectories", str(out / "served.jsonl"), env=env,
        )  # fmt: skip
        assert server.chat_requests  # the credentials really went to the server
        assert server.chat_requests[0].headers["authorization"] == f"Bearer {API_KEY}"
        port = server.base_url.split(":")[2].split("/")[0]
        # The policy spec itself carries the password: it goes as Basic auth, not in the URL.
        url = f"http://agent:{URL_PASSWORD}@127.0.0.1:{port}/v1"
        before = len(server.chat_requests)
        with_password = _eval(
            "--policy", url, "--model", "m", "--set", "eval.n=2",
            "--report", str(out / "url.json"), "--trajectories", str(out / "url.jsonl"),
            env=env,
        )  # fmt: skip
        basic = base64.b64encode(f"agent:{URL_PASSWORD}".encode()).decode()
        sent = [r.headers.get("authorization") for r in server.chat_requests[before:]]
        assert sent and set(sent) == {f"Basic {basic}"}

    assert served.exit_code == 0, served.output
    assert with_password.exit_code == 0, with_password.output
    for result in (served, with_password):
        assert not any(s in result.output for s in SECRETS), result.output
    assert _files_with_secrets(out) == {}
    report = json.loads((out / "url.json").read_text())
    assert report["policy"] == f"http://agent:{REDACTED}@127.0.0.1:{port}/v1"
    assert report["summary"]["episodes"] == 2 if "summary" in report else True
    trajectories = [json.loads(x) for x in (out / "served.jsonl").read_text().splitlines()]
    assert len(trajectories) == 3
    text = json.dumps(trajectories)
    assert "you sent key ***" in text and "Incorrect key" in text  # echoed, then scrubbed


# -- a tiny local training run ------------------------------------------------------------


def _training_config(tmp_path: Path, **values: Any) -> Any:
    pytest.importorskip("torch")
    from ..local.conftest import tiny_config

    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"prompt": f"Write text {k}. Authorization: Bearer {BEARER} {AWS_KEY_ID}"})
            + "\n"
            for k in range(4)
        )
    )
    settings: dict[str, Any] = {
        "global_batch_size": 2,
        "group_size": 2,
        "max_steps": 2,
        "sampling_max_tokens": 8,
        "train_dataset": str(rows),
        "validation_dataset": str(rows),
        "eval.n": 2,
        "local.tiny_model": "156k",
        "local.checkpoint_every": 1,
        "local.run_name": "secret",
        "local.tracking": "mlflow",
        "local.eval_before": True,
        "local.eval_after": True,
        "local.inference": "transformers",
        # Settings a user may well put secrets in (unused by a CPU transformers run).
        "local.vllm_url": f"http://agent:{URL_PASSWORD}@127.0.0.1:9/v1",
        "local.vllm_args": ["--api-key", API_KEY],
        "sagemaker.extra_hyperparameters": {"hf_token": BEARER},
    }
    return tiny_config(tmp_path, **{**settings, **values})


async def test_local_training_run_writes_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from agentrft.backends.local.backend import train_async

    from ..local.conftest import CountA

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    config = _training_config(tmp_path)
    screen = io.StringIO()

    def interrupt(step: int, metrics: dict[str, float]) -> None:
        if step == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await train_async(CountA(), config, console=Console(file=screen), on_step=interrupt)
    run_dir = tmp_path / "runs" / "secret"
    saved = (run_dir / "config.yaml").read_text()
    assert f"agent:{REDACTED}@127.0.0.1:9" in saved

    # Resume puts the secrets back from the config it is given ...
    resumed = await train_async(CountA(), config, resume=str(run_dir), console=Console(file=screen))
    assert resumed.steps == 2 and resumed.after
    # ... and refuses a config that lacks them, naming the keys.
    from agentrft.backend import BackendError

    bare = _training_config(tmp_path, **{"local.vllm_url": None})
    with pytest.raises(BackendError, match=r"without the secrets in local\.vllm_url"):
        await train_async(CountA(), bare, resume=str(run_dir))

    names = {p.name for p in run_dir.rglob("*") if p.is_file()}
    assert {"config.yaml", "run.json", "mlflow.db", "trajectories.jsonl", "metrics.jsonl",
            "before.json", "after.json", "after_trajectories.jsonl", "health.json",
            "report.html", "reward.png"} <= names  # fmt: skip
    assert _files_with_secrets(run_dir) == {}
    assert not any(s in screen.getvalue() for s in SECRETS)
    # The secrets were there to leak: the trajectories show where they were cut out.
    first = json.loads((run_dir / "trajectories.jsonl").read_text().splitlines()[0])
    assert "Authorization: Bearer ***" in first["prompt"]
    from mlflow.tracking import MlflowClient

    info = json.loads((run_dir / "run.json").read_text())
    params = MlflowClient(info["mlflow_tracking_uri"]).get_run(info["mlflow_run_id"]).data.params
    assert params["local.vllm_url"] == f"http://agent:{REDACTED}@127.0.0.1:9/v1"
    assert params["sagemaker.extra_hyperparameters.hf_token"] == REDACTED


# -- the scrubber itself -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://user:pw@host:8000/v1", "http://user:***@host:8000/v1"),
        ("https://h/x?api_key=abc123&model=m", "https://h/x?api_key=***&model=m"),
        ("Authorization: Bearer tok-1-abcdef", "Authorization: Bearer ***"),
        ("--api-key sk1234567 --max-tokens 40", "--api-key *** --max-tokens 40"),
        ('{"password": "hunter22"}', '{"password": "***"}'),
        (f"id {AWS_KEY_ID}", "id ***"),
        ("key sk-proj-abcdefghijklmnop1234", "key ***"),
        ("token: abc12345xyz and signature=0123456789abcdef", "token: *** and signature=***"),
        ("access_token: found; HF_TOKEN=hf_abc", "access_token: ***; HF_TOKEN=***"),
        ("cookie: session=abc123def", "cookie: ***"),
        ("token: " + "x" * 30, "token: ***"),  # long enough to be a key without a digit
        # Not secrets: ordinary words near credential-like names stay.
        ("max_tokens: 40, prompt_token_ids", "max_tokens: 40, prompt_token_ids"),
        ("next token: found the word", "next token: found the word"),
        (
            "token: 40, signature: mine, credentials: none",
            "token: 40, signature: mine, credentials: none",
        ),
        ("valid_token: found", "valid_token: found"),
        ("the secret word is crane; Bearer tokens", "the secret word is crane; Bearer tokens"),
        (
            "postgres://u@h/db and s3://b/k?versionId=3",
            "postgres://u@h/db and s3://b/k?versionId=3",
        ),
    ],
)
def test_scrub_text(text: str, expected: str) -> None:
    assert scrub_text(text) == expected


def test_scrub_data_env_and_json_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "value-from-env-123")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false-but-long")  # not a credential name
    data = {
        "headers": {"Authorization": "anything", "X-Trace": "t"},
        "args": ["--hf-token", "abc", "--port", "8000"],
        "note": "value-from-env-123 and false-but-long",
        "max_tokens": 40,
    }
    assert scrub(data) == {
        "headers": {"Authorization": REDACTED, "X-Trace": "t"},
        "args": ["--hf-token", REDACTED, "--port", "8000"],
        "note": "*** and false-but-long",
        "max_tokens": 40,
    }
    # A secret right after an escape stays valid JSON once scrubbed.
    line = json.dumps({"a": "x\nvalue-from-env-123", "b": 1.5})
    assert json.loads(scrub_json_line(line)) == {"a": "x\n***", "b": 1.5}
    assert scrub_json_line('{"a": "plain"}') == '{"a": "plain"}'  # untouched, byte for byte
    # Found by the key or flag that names them, though the values look like nothing.
    assert json.loads(scrub_json_line('{"h": {"X-Api-Key": "plainvalue"}, "n": [1, 2]}')) == {
        "h": {"X-Api-Key": REDACTED},
        "n": [1, 2],
    }
    assert json.loads(scrub_json_line('{"args": ["--hf-token", "abc"]}')) == {
        "args": ["--hf-token", REDACTED]
    }


def test_restore_redacted() -> None:
    given = {"url": "http://u:pw@h", "args": ["--api-key", "k"], "n": 2}
    saved = scrub({**given, "n": 1})
    assert restore_redacted(saved, given) == ({**given, "n": 1}, [])
    assert restore_redacted(saved, {"url": None, "args": [], "n": 1}) == (saved, ["url", "args"])
