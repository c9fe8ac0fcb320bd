"""An object-store location (`s3://bucket/prefix`): its settings, the LanceDB storage options, and a
small S3 client for the few objects the sidecar keeps beside LanceDB's (meta.json, the lease).

The client signs requests itself (AWS Signature Version 4 over the standard library's HTTP), so
object-store mode adds no dependency and works in the frozen binary. It speaks path-style URLs, like
LanceDB's own client, to AWS S3 and to S3-compatible servers (MinIO, Ceph, R2, moto). It is also how
start-up tells a wrong key, a missing bucket and an unreachable endpoint apart before LanceDB opens
anything (`check_access`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Mapping

SCHEMES = ("s3://",)
DEFAULT_REGION = "us-east-1"
TIMEOUT_SECONDS = 10.0
CREDENTIAL_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken",
                    "InvalidClientTokenId", "AuthorizationHeaderMalformed"}


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
    def resolve(cls, environ: Mapping[str, str], endpoint: str | None = None, region: str | None = None,
                access_key_id: str | None = None, secret_env: str = "AWS_SECRET_ACCESS_KEY") -> "ObjectStoreSettings":
        """Configuration first, then the standard AWS variables."""
        endpoint = endpoint or environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None
        region = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
        return cls(endpoint.rstrip("/") if endpoint else None, region,
                   access_key_id or environ.get("AWS_ACCESS_KEY_ID") or None,
                   environ.get(secret_env) or None, environ.get("AWS_SESSION_TOKEN") or None)

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
    def parse(cls, uri: str) -> "ObjectLocation":
        rest = uri.split("://", 1)[1]
        bucket, _, prefix = rest.partition("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
            raise ValueError(f"{uri!r}: {bucket!r} is not a bucket name (3-63 lower-case letters, digits, '.', '-')")
        prefix = prefix.strip("/")
        return cls(f"s3://{bucket}/{prefix}".rstrip("/"), bucket, prefix)

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def child_uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def __str__(self) -> str:
        return self.uri


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3Client:
    def __init__(self, settings: ObjectStoreSettings, bucket: str, timeout: float = TIMEOUT_SECONDS):
        self.settings, self.bucket, self.timeout = settings, bucket, timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def sign(self, method: str, path: str, query: str, body: bytes, extra: dict[str, str],
             now: dt.datetime | None = None) -> dict[str, str]:
        """The request's headers with its AWS Signature Version 4 `authorization` (path and query already encoded)."""
        s = self.settings
        now = now or dt.datetime.now(dt.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        host = urllib.parse.urlsplit(s.base_url).netloc
        headers = {"host": host, "x-amz-content-sha256": hashlib.sha256(body).hexdigest(), "x-amz-date": amz_date}
        if s.session_token:
            headers["x-amz-security-token"] = s.session_token
        signed = sorted(headers)
        canonical = "\n".join([method, path, query, *(f"{h}:{headers[h]}" for h in signed), "", ";".join(signed),
                               headers["x-amz-content-sha256"]])
        scope = f"{day}/{s.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = _sign(_sign(_sign(_sign(f"AWS4{s.secret_access_key or ''}".encode(), day), s.region), "s3"), "aws4_request")
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={s.access_key_id}/{scope}, "
                                    f"SignedHeaders={';'.join(signed)}, Signature={signature}")
        del headers["host"]
        return {**headers, **extra}

    def request(self, method: str, key: str = "", body: bytes = b"", query: dict[str, str] | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """One signed request; raises ObjectStoreError for anything but 2xx."""
        path = "/" + urllib.parse.quote(self.bucket + ("/" + key if key else ""), safe="/-_.~")
        q = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                     for k, v in sorted((query or {}).items()))
        req = urllib.request.Request(self.settings.base_url + path + ("?" + q if q else ""), data=body or None,
                                     method=method, headers=self.sign(method, path, q, body, headers or {}))
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as exc:
            data = exc.read() or b""
            m = re.search(rb"<Code>([^<]+)</Code>", data)
            code = m.group(1).decode() if m else ""
            cls = PreconditionFailed if exc.code in (409, 412) and code != "NoSuchBucket" else ObjectStoreError
            raise cls(f"{method} {path}: HTTP {exc.code} {code}".strip(), exc.code, code) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ObjectStoreError(f"{method} {self.settings.base_url}{path}: {reason}") from None

    def get(self, key: str) -> tuple[bytes, str] | None:
        """(body, etag), or None when there is no such object."""
        try:
            _, headers, body = self.request("GET", key)
        except ObjectStoreError as exc:
            if exc.status == 404 and exc.code != "NoSuchBucket":
                return None
            raise
        return body, headers.get("etag", "")

    def put(self, key: str, body: bytes, if_none_match: bool = False, if_match: str | None = None) -> str:
        """Write an object; returns its new etag. PreconditionFailed when a condition does not hold."""
        extra = {"content-type": "application/json"}
        if if_none_match:
            extra["if-none-match"] = "*"
        if if_match:
            extra["if-match"] = if_match
        _, headers, _ = self.request("PUT", key, body, headers=extra)
        return headers.get("etag", "")

    def delete(self, key: str) -> None:
        try:
            self.request("DELETE", key)
        except ObjectStoreError as exc:
            if exc.status != 404:
                raise

    def list_keys(self, prefix: str, limit: int = 1) -> None:
        self.request("GET", "", query={"list-type": "2", "max-keys": str(limit), "prefix": prefix})


def access_problem(exc: ObjectStoreError, location: ObjectLocation, settings: ObjectStoreSettings) -> str:
    """What went wrong reaching the location, and what to do: one sentence for `startup_failed`."""
    where = f"{location} ({settings.describe()})"
    if exc.status == 0:
        return (f"cannot reach the object store for {where}: {exc}. Check the endpoint (--s3-endpoint, "
                "MEMORY_SIDECAR_S3_ENDPOINT or AWS_ENDPOINT_URL) and that the server is running and reachable")
    if exc.code == "NoSuchBucket" or (exc.status == 404 and not exc.code):
        return (f"bucket {location.bucket!r} does not exist at {settings.base_url}: create it first (for example "
                f"`aws s3 mb s3://{location.bucket}`) or correct --data-dir")
    if exc.code in CREDENTIAL_CODES or exc.status in (401, 403):
        return (f"the object store refused the credentials for {where} ({exc.code or f'HTTP {exc.status}'}): check "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), and that they may list, get, "
                f"put and delete objects in bucket {location.bucket!r}")
    if exc.status in (301, 307) or exc.code in ("PermanentRedirect", "AuthorizationHeaderMalformed"):
        return f"bucket {location.bucket!r} is in another region than {settings.region}: set AWS_DEFAULT_REGION or --s3-region"
    return f"the object store answered an error for {where}: {exc}"


def check_access(client: S3Client, location: ObjectLocation) -> None:
    """List one key under the prefix: the endpoint answers, the bucket exists, the credentials work.
    Raises ValueError with `access_problem`'s sentence otherwise."""
    s = client.settings
    if not s.access_key_id or not s.secret_access_key:
        raise ValueError(f"no credentials for {location}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                         "(or --s3-access-key-id and the variable named by --s3-secret-access-key-env)")
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
