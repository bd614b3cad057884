"""S3 for datasets: parse URIs, find a bucket's region, upload a rows file, read one back."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentrft.backends.sagemaker.jobs.aws import SageMakerError, error_code, error_message

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws

#: A single PutObject carries at most 5 GB; dataset files are far smaller.
MAX_PUT_BYTES = 5 * 1024**3

_CONTENT_TYPES = {
    ".jsonl": "application/jsonl",
    ".json": "application/json",
    ".csv": "text/csv",
    ".parquet": "application/vnd.apache.parquet",
}


@dataclass(frozen=True)
class S3Uri:
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def parse_s3_uri(uri: str, *, what: str = "S3 URI") -> S3Uri:
    """`s3://bucket/key` -> S3Uri; anything else raises naming `what`."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise SageMakerError(f"{what} {uri!r} must look like s3://bucket/key")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not bucket:
        raise SageMakerError(f"{what} {uri!r} has no bucket name")
    return S3Uri(bucket, key)


def bucket_region(aws: Aws, bucket: str) -> str:
    """The bucket's region (GetBucketLocation), with errors that name the fix."""
    try:
        loc = aws.client("s3").get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except Exception as exc:
        code = error_code(exc)
        if code == "NoSuchBucket":
            raise SageMakerError(
                f"bucket {bucket!r} does not exist; create it in {aws.region}: "
                f"aws s3 mb s3://{bucket} --region {aws.region}"
            ) from None
        raise SageMakerError(
            f"cannot read the region of bucket {bucket!r} ({code or type(exc).__name__}: "
            f"{error_message(exc)}); the caller needs s3:GetBucketLocation on it"
        ) from None
    return location_region(loc)


def location_region(location: str | None) -> str:
    """A GetBucketLocation `LocationConstraint` as a region (none: us-east-1, 'EU': eu-west-1)."""
    if not location:
        return "us-east-1"
    return "eu-west-1" if location == "EU" else str(location)


def check_same_region(aws: Aws, uri: str, *, what: str = "S3 URI") -> str:
    """Raise unless the URI's bucket is in the session's region; returns the region."""
    parsed = parse_s3_uri(uri, what=what)
    region = bucket_region(aws, parsed.bucket)
    if region != aws.region:
        raise SageMakerError(
            f"{what} {uri} is in bucket {parsed.bucket!r} in {region}, but the job runs in "
            f"{aws.region}: the job, the runtime and the bucket must share one region. Use a "
            f"bucket in {aws.region}, or run in {region} (--region {region})"
        )
    return region


def upload_file(aws: Aws, path: str | Path, uri: str, *, check_region: bool = True) -> S3Uri:
    """Upload a local rows file to `uri` (a key, or a prefix ending in `/`)."""
    path = Path(path)
    if not path.is_file():
        raise SageMakerError(f"dataset file {path} does not exist")
    size = path.stat().st_size
    if size == 0:
        raise SageMakerError(f"dataset file {path} is empty")
    if size > MAX_PUT_BYTES:
        raise SageMakerError(f"dataset file {path} is over 5 GB; split it into parts")
    target = parse_s3_uri(uri, what="destination")
    if not target.key or target.key.endswith("/"):
        target = S3Uri(target.bucket, target.key + path.name)
    if check_region:
        check_same_region(aws, str(target), what="destination")
    body = path.read_bytes()
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
    try:
        aws.client("s3").put_object(
            Bucket=target.bucket,
            Key=target.key,
            Body=body,
            ContentType=_CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream"),
            ChecksumSHA256=digest,
        )
    except Exception as exc:
        raise SageMakerError(
            f"upload of {path} to {target} failed ({error_code(exc) or type(exc).__name__}: "
            f"{error_message(exc)}); the caller needs s3:PutObject on the bucket"
        ) from None
    return target


def read_text(aws: Aws, uri: str, *, max_bytes: int = 256 * 1024**2) -> str:
    """The object's text (UTF-8). A prefix URI reads the first object under it."""
    parsed = parse_s3_uri(uri)
    s3 = aws.client("s3")
    key = parsed.key
    try:
        if not key or key.endswith("/"):
            listing = s3.list_objects_v2(Bucket=parsed.bucket, Prefix=key, MaxKeys=10)
            keys = [o["Key"] for o in listing.get("Contents", []) if not o["Key"].endswith("/")]
            if not keys:
                raise SageMakerError(
                    f"no object under {uri}; upload rows with `agentrft dataset upload`"
                )
            key = keys[0]
        obj = s3.get_object(Bucket=parsed.bucket, Key=key)
        body = obj["Body"].read(max_bytes + 1)
    except SageMakerError:
        raise
    except Exception as exc:
        raise SageMakerError(
            f"cannot read {uri} ({error_code(exc) or type(exc).__name__}: {error_message(exc)})"
        ) from None
    if len(body) > max_bytes:
        raise SageMakerError(f"{uri} is over {max_bytes} bytes; check a smaller sample")
    return body.decode("utf-8")
