"""AWS plumbing shared by the job commands: one boto3 session, its clients, ARN helpers.

boto3 is imported inside the functions, so importing this module makes no AWS call and
stays cheap for `agentrft --help`. Tests pass an `Aws` built on a session whose clients
are wrapped by `botocore.stub.Stubber`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentrft.backend import BackendError

if TYPE_CHECKING:
    import boto3

    from agentrft.backends.sagemaker.settings import SageMakerConfig


class SageMakerError(BackendError):
    """A SageMaker-backend failure with a message that names the input and the fix."""


_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
    r"(?P<account>\d{12}|aws|):(?P<resource>.+)$"
)


@dataclass(frozen=True)
class Arn:
    partition: str
    service: str
    region: str
    account: str
    resource: str

    @property
    def resource_name(self) -> str:
        """The part after the last `/` (a role, runtime or job name)."""
        return self.resource.rsplit("/", 1)[-1]


def parse_arn(value: str, *, what: str = "ARN") -> Arn:
    """Split an ARN; a malformed one raises `SageMakerError` naming `what`."""
    m = _ARN.match(value or "")
    if not m:
        raise SageMakerError(
            f"{what} {value!r} is not an ARN (expected arn:aws:<service>:<region>:<account>:...)"
        )
    return Arn(**m.groupdict())


@dataclass
class Aws:
    """A boto3 session plus lazily created, cached clients.

    `clients` may be pre-filled (tests put stubbed clients there); any other client is
    created from the session on first use.
    """

    session: boto3.session.Session
    region: str
    clients: dict[str, Any] = field(default_factory=dict)
    _account: str | None = None

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self.session.client(service, region_name=self.region)
        return self.clients[service]

    @property
    def sagemaker(self) -> Any:
        return self.client("sagemaker")

    def account_id(self) -> str:
        """The caller's account (STS GetCallerIdentity, once)."""
        if self._account is None:
            self._account = self.client("sts").get_caller_identity()["Account"]
        return self._account


def make_aws(cfg: SageMakerConfig | None = None, region: str | None = None) -> Aws:
    """A session from the config's profile and region (else the SDK's resolution)."""
    import boto3
    import botocore.exceptions

    profile = cfg.profile if cfg else None
    try:
        session = boto3.session.Session(profile_name=profile)
    except botocore.exceptions.ProfileNotFound:
        raise SageMakerError(
            f"AWS profile {profile!r} (sagemaker.profile) is not in your AWS config; "
            "run `aws configure --profile NAME` or unset it"
        ) from None
    resolved = region or (cfg.region if cfg else None) or session.region_name
    if not resolved:
        raise SageMakerError(
            "no AWS region: set sagemaker.region in the config, pass --region, or export "
            "AWS_REGION (the job, the runtime and the S3 bucket must share it)"
        )
    return Aws(session=session, region=resolved)


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError ('' for anything else)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def error_message(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Message", "")) or str(exc)
    return str(exc)


def is_access_denied(exc: BaseException) -> bool:
    return error_code(exc) in {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "AuthorizationError",
    }


def has_create_job() -> tuple[bool, str]:
    """Whether the installed botocore knows CreateJob and the job runtime (no AWS call)."""
    import botocore
    import botocore.session

    session = botocore.session.get_session()
    try:
        ops = session.get_service_model("sagemaker").operation_names
        services = session.get_available_services()
    except Exception as exc:  # a broken botocore install
        return False, f"botocore {botocore.__version__}: {exc}"
    ok = "CreateJob" in ops and "sagemakerjobruntime" in services
    return ok, f"botocore {botocore.__version__}"


def job_region(sm: SageMakerConfig) -> str:
    """A job's region without any call: the config's, the runtime's, else the SDK's local
    resolution (environment, shared config file)."""
    if sm.region:
        return sm.region
    if sm.runtime_arn:
        try:
            return parse_arn(sm.runtime_arn, what="runtime ARN").region
        except SageMakerError:
            pass  # the input checks name the malformed ARN
    return make_aws(sm).region


def role_account(sm: SageMakerConfig) -> str | None:
    """The job's account as the role ARN states it (offline placeholders use it)."""
    try:
        return parse_arn(sm.role_arn or "", what="role ARN").account or None
    except SageMakerError:
        return None
