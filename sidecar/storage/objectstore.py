"""An object-store location (`s3://bucket/prefix`): its settings, the LanceDB storage options, and the
few objects the sidecar keeps beside LanceDB's (meta.json, the lease).

Those objects go through `obstore` (Python bindings of the Rust `object_store` crate, the library
LanceDB's own storage is built on): request signing, credentials, retries and conditional writes
(`If-None-Match: *` to create, `If-Match: <etag>` to replace) are its. It speaks path-style URLs, like
LanceDB's client, to AWS S3 and to S3-compatible servers (MinIO, Ceph, R2, moto). It is also how
start-up tells a wrong key, a missing bucket and an unreachable endpoint apart before LanceDB opens
anything (`check_access`). obstore is imported only when a client is made (an `s3://` data dir).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # obstore is imported where an object store is used; S3Config exists for type checkers only
    from obstore.store import S3Config

SCHEMES = ("s3://",)
DEFAULT_REGION = "us-east-1"
TIMEOUT_SECONDS = 10.0
CREDENTIAL_CODES = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "InvalidClientTokenId",
    "AuthorizationHeaderMalformed",
}


def is_object_uri(value: str) -> bool:
    return str(value).lower().startswith(SCHEMES)


class ObjectStoreError(RuntimeError):
    """A request the object store refused (status and S3 error code) or could not be sent (status 0)."""

    def __init__(self, message: str, status: int = 0, code: str = ""):
        super().__init__(message)
        self.status, self.code = status, code


class PreconditionFailed(ObjectStoreError):
    """A conditional write lost: the object exists (If-None-Match) or changed (If-Match)."""


@dataclass(frozen=True)
class ObjectStoreSettings:
    endpoint: str | None  # None: AWS S3 in `region`
    region: str
    access_key_id: str | None
    secret_access_key: str | None = None
    session_token: str | None = None

    @classmethod
    def resolve(
        cls,
        environ: Mapping[str, str],
        endpoint: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_env: str = "AWS_SECRET_ACCESS_KEY",
    ) -> ObjectStoreSettings:
        """Configuration first, then the standard AWS variables."""
        endpoint = endpoint or environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None
        region = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
        return cls(
            endpoint.rstrip("/") if endpoint else None,
            region,
            access_key_id or environ.get("AWS_ACCESS_KEY_ID") or None,
            environ.get(secret_env) or None,
            environ.get("AWS_SESSION_TOKEN") or None,
        )

    @property
    def base_url(self) -> str:
        return self.endpoint or f"https://s3.{self.region}.amazonaws.com"

    def describe(self) -> str:
        return f"endpoint {self.base_url}, region {self.region}"

    def lance_options(self) -> dict[str, str]:
        """LanceDB's `storage_options` (its object_store keys)."""
        opts = {"aws_region": self.region, "aws_endpoint": self.base_url}
        if self.base_url.startswith("http://"):
            opts["allow_http"] = "true"
        if self.access_key_id:
            opts["aws_access_key_id"] = self.access_key_id
        if self.secret_access_key:
            opts["aws_secret_access_key"] = self.secret_access_key
        if self.session_token:
            opts["aws_session_token"] = self.session_token
        return opts


@dataclass(frozen=True)
class ObjectLocation:
    """`s3://bucket/prefix`: the sidecar's data dir in a bucket."""

    uri: str
    bucket: str
    prefix: str  # no leading or trailing slash; may be ""

    @classmethod
    def parse(cls, uri: str) -> ObjectLocation:
        rest = uri.split("://", 1)[1]
        bucket, _, prefix = rest.partition("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
            shown = bucket if len(bucket) <= 64 else f"{bucket[:64]}..."  # a name is at most 63 characters
            raise ValueError(f"{shown!r} is not a bucket name (3-63 lower-case letters, digits, '.', '-')")
        prefix = prefix.strip("/")
        return cls(f"s3://{bucket}/{prefix}".rstrip("/"), bucket, prefix)

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def child_uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def __str__(self) -> str:
        return self.uri


_STATUS = re.compile(r"status code: (\d{3})")
_CODE = re.compile(r"<Code>([^<]+)</Code>")
RETRIES = 2  # a request that fails to connect or gets a 5xx is tried this many more times, within the timeout


def _error(exc: Exception, what: str) -> ObjectStoreError:
    """obstore's exception as ours: the HTTP status and S3 error code it carries (0 and "" when the request
    never got an answer: no server, a refused connection, a timeout)."""
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    text = str(exc)
    status = int(m.group(1)) if (m := _STATUS.search(text)) else 0
    code = m.group(1) if (m := _CODE.search(text)) else ""
    first = text.split("\n", 1)[0]
    reason = first if status else re.sub(r"^Generic S3 error: ", "", first)
    if isinstance(exc, (AlreadyExistsError, PreconditionError)):
        return PreconditionFailed(f"{what}: HTTP {status or 412} {code}".strip(), status or 412, code)
    return ObjectStoreError(f"{what}: HTTP {status} {code}".strip() if status else f"{what}: {reason}", status, code)


class S3Client:
    """The objects of one bucket, through obstore."""

    def __init__(self, settings: ObjectStoreSettings, bucket: str, timeout: float = TIMEOUT_SECONDS):
        self.settings, self.bucket, self.timeout = settings, bucket, timeout
        try:
            import obstore
            from obstore.store import S3Store
        except ImportError as exc:
            raise ObjectStoreError(
                f"object-store data dirs need the obstore package ({exc}): pip install 'obstore>=0.8'"
            ) from None
        self._obs = obstore
        s = settings
        config: S3Config = {"endpoint": s.base_url, "region": s.region, "virtual_hosted_style_request": False}
        if s.access_key_id:
            config["access_key_id"] = s.access_key_id
        if s.secret_access_key:
            config["secret_access_key"] = s.secret_access_key
        if s.session_token:
            config["session_token"] = s.session_token
        wait = dt.timedelta(seconds=timeout)
        self._store = S3Store(
            bucket,
            config=config,
            client_options={"allow_http": s.base_url.startswith("http://"), "timeout": wait, "connect_timeout": wait},
            retry_config={
                "max_retries": RETRIES,
                "retry_timeout": wait,
                "backoff": {
                    "init_backoff": dt.timedelta(milliseconds=100),
                    "max_backoff": dt.timedelta(seconds=1),
                    "base": 2,
                },
            },
        )

    def _where(self, method: str, key: str = "") -> str:
        return f"{method} {self.settings.base_url}/{self.bucket}/{key}".rstrip("/")

    def get(self, key: str) -> tuple[bytes, str] | None:
        """(body, etag), or None when there is no such object."""
        try:
            result = self._obs.get(self._store, key)
            return bytes(result.bytes()), result.meta.get("e_tag") or ""
        except FileNotFoundError as exc:  # obstore's NotFoundError
            if "NoSuchBucket" in str(exc):
                raise _error(exc, self._where("GET", key)) from None
            return None
        except Exception as exc:
            raise _error(exc, self._where("GET", key)) from None

    def put(self, key: str, body: bytes, if_none_match: bool = False, if_match: str | None = None) -> str:
        """Write an object; returns its new etag. PreconditionFailed when a condition does not hold."""
        mode: Any = "create" if if_none_match else {"e_tag": if_match} if if_match else "overwrite"
        try:
            result = self._obs.put(self._store, key, body, mode=mode, attributes={"Content-Type": "application/json"})
        except Exception as exc:
            raise _error(exc, self._where("PUT", key)) from None
        return result.get("e_tag") or ""

    def delete(self, key: str) -> None:
        try:
            self._obs.delete(self._store, key)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise _error(exc, self._where("DELETE", key)) from None

    def sizes(self, prefix: str) -> Iterator[int]:
        """The size of every object under `prefix/` (listed a page at a time)."""
        try:
            for page in self._obs.list(self._store, prefix):
                for meta in page:
                    yield int(meta["size"])
        except Exception as exc:
            raise _error(exc, self._where("LIST", prefix)) from None

    def list_keys(self, prefix: str) -> None:
        """List the first page under `prefix` (what `check_access` needs to know the store answers)."""
        try:
            next(iter(self._obs.list(self._store, prefix, chunk_size=1)), None)
        except Exception as exc:
            raise _error(exc, self._where("LIST", prefix)) from None


def access_problem(exc: ObjectStoreError, location: ObjectLocation, settings: ObjectStoreSettings) -> str:
    """What went wrong reaching the location, and what to do: one sentence for `startup_failed`."""
    where = f"{location} ({settings.describe()})"
    if exc.status == 0:
        return (
            f"cannot reach the object store for {where}: {exc}. Check the endpoint (--s3-endpoint, "
            "MEMORY_SIDECAR_S3_ENDPOINT or AWS_ENDPOINT_URL) and that the server is running and reachable"
        )
    if exc.code == "NoSuchBucket" or (exc.status == 404 and not exc.code):
        return (
            f"bucket {location.bucket!r} does not exist at {settings.base_url}: create it first (for example "
            f"`aws s3 mb s3://{location.bucket}`) or correct --data-dir"
        )
    if exc.code in CREDENTIAL_CODES or exc.status in (401, 403):
        return (
            f"the object store refused the credentials for {where} ({exc.code or f'HTTP {exc.status}'}): check "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), and that they may list, get, "
            f"put and delete objects in bucket {location.bucket!r}"
        )
    if exc.status in (301, 307) or exc.code in ("PermanentRedirect", "AuthorizationHeaderMalformed"):
        return (
            f"bucket {location.bucket!r} is in another region than {settings.region}: "
            "set AWS_DEFAULT_REGION or --s3-region"
        )
    return f"the object store answered an error for {where}: {exc}"


def check_access(client: S3Client, location: ObjectLocation) -> None:
    """List one key under the prefix: the endpoint answers, the bucket exists, the credentials work.
    Raises ValueError with `access_problem`'s sentence otherwise."""
    s = client.settings
    if not s.access_key_id or not s.secret_access_key:
        raise ValueError(
            f"no credentials for {location}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or --s3-access-key-id and the variable named by --s3-secret-access-key-env)"
        )
    try:
        client.list_keys(location.key(""))
    except ObjectStoreError as exc:
        raise ValueError(access_problem(exc, location, s)) from None


def conditional_put_works(client: S3Client, location: ObjectLocation, token: str) -> bool:
    """Whether the store refuses a second `If-None-Match: *` write of one key: what LanceDB's commits
    need to be safe with several writers."""
    key = location.key(f".probe-{token}")
    try:
        client.put(key, b"1", if_none_match=True)
        try:
            client.put(key, b"2", if_none_match=True)
        except PreconditionFailed:
            return True
        return False
    finally:
        client.delete(key)
