"""Dataset upload and S3 regions, through a stubbed S3 client."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.s3 import (
    bucket_region,
    check_same_region,
    parse_s3_uri,
    upload_file,
)
from agentrft.backends.sagemaker.testing.stubbed import stubbed_aws


def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    path.write_text('{"prompt": "{\\"secret\\": 5, \\"low\\": 1, \\"high\\": 10}"}\n')
    return path


def test_parse_s3_uri() -> None:
    assert parse_s3_uri("s3://b/k/x.jsonl").bucket == "b"
    assert parse_s3_uri("s3://b").key == ""
    for bad in ("b/k", "https://b/k", "s3://"):
        with pytest.raises(SageMakerError, match="s3://"):
            parse_s3_uri(bad)


def test_bucket_region_reads_the_legacy_answers() -> None:
    s = stubbed_aws("eu-west-1", services=["s3"])
    s["s3"].add_response("get_bucket_location", {}, {"Bucket": "old"})
    s["s3"].add_response("get_bucket_location", {"LocationConstraint": "EU"}, {"Bucket": "eu"})
    s["s3"].add_response(
        "get_bucket_location", {"LocationConstraint": "ap-south-1"}, {"Bucket": "mumbai"}
    )
    assert bucket_region(s.aws, "old") == "us-east-1"
    assert bucket_region(s.aws, "eu") == "eu-west-1"
    assert bucket_region(s.aws, "mumbai") == "ap-south-1"
    s.assert_done()


def test_upload_to_a_prefix_in_the_same_region(tmp_path: Path) -> None:
    path = rows_file(tmp_path)
    data = path.read_bytes()
    s = stubbed_aws("us-west-2", services=["s3"])
    s["s3"].add_response(
        "get_bucket_location", {"LocationConstraint": "us-west-2"}, {"Bucket": "data"}
    )
    s["s3"].add_response(
        "put_object",
        {"ETag": '"abc"'},
        {
            "Bucket": "data",
            "Key": "wordle/train.jsonl",
            "Body": data,
            "ContentType": "application/jsonl",
            "ChecksumSHA256": base64.b64encode(hashlib.sha256(data).digest()).decode(),
        },
    )
    target = upload_file(s.aws, path, "s3://data/wordle/")
    s.assert_done()
    assert str(target) == "s3://data/wordle/train.jsonl"


def test_upload_to_another_region_is_refused_before_any_put(tmp_path: Path) -> None:
    s = stubbed_aws("us-east-1", services=["s3"])
    s["s3"].add_response("get_bucket_location", {"LocationConstraint": "eu-central-1"})
    with pytest.raises(SageMakerError) as err:
        upload_file(s.aws, rows_file(tmp_path), "s3://data/train.jsonl")
    assert "eu-central-1" in str(err.value) and "us-east-1" in str(err.value)
    assert "--region eu-central-1" in str(err.value)
    s.assert_done()


def test_missing_bucket_and_failed_put_explain_the_fix(tmp_path: Path) -> None:
    s = stubbed_aws("us-east-1", services=["s3"])
    s["s3"].add_client_error("get_bucket_location", "NoSuchBucket", "The bucket does not exist")
    with pytest.raises(SageMakerError, match="aws s3 mb s3://nope --region us-east-1"):
        check_same_region(s.aws, "s3://nope/x")
    s["s3"].add_response("get_bucket_location", {})
    s["s3"].add_client_error("put_object", "AccessDenied", "Access Denied", expected_params=None)
    with pytest.raises(SageMakerError, match="s3:PutObject"):
        upload_file(s.aws, rows_file(tmp_path), "s3://data/train.jsonl")
    s.assert_done()


def test_missing_or_empty_file(tmp_path: Path) -> None:
    s = stubbed_aws(services=["s3"])
    with pytest.raises(SageMakerError, match="does not exist"):
        upload_file(s.aws, tmp_path / "none.jsonl", "s3://b/")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(SageMakerError, match="is empty"):
        upload_file(s.aws, empty, "s3://b/")
    s.assert_done()
