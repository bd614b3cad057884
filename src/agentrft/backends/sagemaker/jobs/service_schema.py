"""Validate a JobConfigDocument against the schema the service publishes for its category.

DescribeJobSchemaVersion returns the JSON schema of a category's document [model]; checking
against it before CreateJob turns a document mistake into a message naming the field,
instead of a rejected (or, worse, a queued and failed) job. When the schema cannot be read
(permissions, an older account) the check is skipped with a note: botocore's model check and
the documented ranges still run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError, error_code

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws


def fetch_schema(aws: Aws, category: str, notes: list[str]) -> dict[str, Any] | None:
    """The category's document schema, or None (with a note) when it cannot be had."""
    try:
        resp = aws.sagemaker.describe_job_schema_version(
            JobCategory=category, JobConfigSchemaVersion=facts.JOB_CONFIG_SCHEMA_VERSION
        )
        schema = json.loads(resp["JobConfigSchema"])
    except Exception as exc:
        notes.append(
            f"{category} document schema not checked (DescribeJobSchemaVersion: "
            f"{error_code(exc) or type(exc).__name__})"
        )
        return None
    return schema if isinstance(schema, dict) else None


def schema_errors(schema: dict[str, Any], document: dict[str, Any], limit: int = 8) -> list[str]:
    """Each way `document` breaks `schema`, as `path: message` ([] = valid)."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema ships with the sagemaker extra
        return []
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return []  # an unusable schema must not block a job; botocore's check still ran
    errors = sorted(cls(schema).iter_errors(document), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors[:limit]:
        path = "/".join(str(p) for p in err.absolute_path) or "(document)"
        out.append(f"{path}: {err.message}")
    return out


def check_document(aws: Aws, category: str, document: dict[str, Any], notes: list[str]) -> None:
    """Raise `SageMakerError` when the service's schema rejects `document`."""
    schema = fetch_schema(aws, category, notes)
    if schema is None:
        return
    problems = schema_errors(schema, document)
    if problems:
        raise SageMakerError(
            f"the {category} JobConfigDocument does not match the service's schema "
            f"{facts.JOB_CONFIG_SCHEMA_VERSION}:\n- " + "\n- ".join(problems)
        )
