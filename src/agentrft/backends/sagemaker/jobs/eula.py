"""The base model's end-user license: what `AcceptEula: true` in every job accepts.

Every AgentRFT and AgentRFTEvaluation job document carries `AcceptEula: true` (the service
needs it, and AWS's SDK always sends it), which accepts the model's license on the user's
behalf. So every plan names the license, and nothing is submitted until the user has said
yes once for that model and license: `--accept-eula` or `sagemaker.accept_eula: true`. The
yes is remembered in `$XDG_CONFIG_HOME/agentrft/accepted-eulas.json` (default
`~/.config`), keyed by model and license URL, so a model whose license changes asks again.

Where the license is: the hub content document's `HostingEulaUri` (an s3:// object of
AWS's public JumpStart buckets, readable over https; the SDK's `get_eula_url` turns it into
the same https URL). Offline (a dry run without `--lookups`) the URL is not known: the plan
says how to look it up.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError

RECORD_NAME = "accepted-eulas.json"


def eula_url(document: dict[str, Any], region: str) -> str | None:
    """The https URL of the license a hub content document names (None: it names none)."""
    uri = document.get("HostingEulaUri")
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        return None
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://{bucket}.s3.{region}.{suffix}/{key}"


def record_path() -> Path:
    """Where accepted licenses are remembered (per user, not per project)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentrft" / RECORD_NAME


def _read_record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SageMakerError(
            f"cannot read the accepted-license record {path} ({exc}); fix or delete it, then "
            "accept again with --accept-eula"
        ) from None
    return data if isinstance(data, dict) else {}


def _key(model: str, url: str | None) -> str:
    return f"{model} {url or '(no license URL on the hub)'}"


@dataclass(frozen=True)
class Eula:
    """The license one job accepts: `url` None when it was not looked up or the hub names
    none."""

    model: str
    url: str | None
    looked_up: bool

    def describe(self) -> str:
        if self.url:
            return f"the end-user license of {self.model}: {self.url}"
        if self.looked_up:
            return (
                f"the terms of {self.model} (its hub entry names no license file; see its "
                "model card in SageMaker Studio's JumpStart)"
            )
        return (
            f"the end-user license of {self.model}, named by HostingEulaUri in `aws sagemaker "
            f"describe-hub-content --hub-name {facts.PUBLIC_HUB} --hub-content-type Model "
            f"--hub-content-name {self.model}` (a dry run with --lookups shows it)"
        )

    def accepted(self) -> bool:
        """Accepted before, for this model and this license URL."""
        if self.looked_up:
            return _key(self.model, self.url) in _read_record(record_path())
        # Offline the URL is unknown: any license accepted for the model counts.
        return any(k.split(" ", 1)[0] == self.model for k in _read_record(record_path()))

    def remember(self) -> Path:
        path = record_path()
        record = _read_record(path)
        record[_key(self.model, self.url)] = {
            "model": self.model,
            "url": self.url,
            "accepted_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        tmp.replace(path)
        return path


def check_eula(eula: Eula, *, accept: bool, dry_run: bool) -> list[str]:
    """The plan's lines about the license; raises before a submission the user has not
    accepted it for. `accept` (the flag or config key) accepts and remembers it."""
    lines = [f"AcceptEula: true in every job accepts {eula.describe()}"]
    if accept:
        if not dry_run:
            lines.append(f"license accepted (--accept-eula); remembered in {eula.remember()}")
        return lines
    if eula.accepted():
        lines.append(f"license accepted before (recorded in {record_path()})")
        return lines
    if dry_run:
        lines.append(
            "a real run will ask you to accept it first: read it, then add --accept-eula "
            "(or set sagemaker.accept_eula: true) once"
        )
        return lines
    raise SageMakerError(
        f"this job would accept {eula.describe()} on your behalf (AcceptEula: true), which "
        "you have not accepted yet; read it, then run again with --accept-eula (or set "
        "sagemaker.accept_eula: true). Nothing was submitted."
    )
