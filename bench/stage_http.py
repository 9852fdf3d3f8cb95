"""The https side of `python -m bench.stage_data fetch`: credentials only to their origin,
no plain http unless asked, no body larger than allowed, a short body named as such.

Standard library only (it runs in the training image unchanged). Why each rule:
- `ATLAS_SOURCE_AUTHORIZATION` is a secret given for the source's origin (scheme, host,
  port). urllib copies a request's headers onto every redirect, so a source that redirects
  to another host would receive it: here a redirect keeps the header only when it stays
  on the same origin (as browsers and curl do: https://curl.se/docs/CVE-2018-1000007.html).
- plain http lets anyone on the path read the credential and swap the bytes (the sha256
  still catches the latter, after the whole download): refused unless `--allow-http` (or
  ATLAS_ALLOW_HTTP=1 for the in-cluster fetch), and never reached by a redirect from https.
- a body is read only up to the expected size (data.size) or the cap (ATLAS_STAGE_MAX_BYTES,
  default 1 TiB): a wrong or hostile server cannot fill the data volume before the checksum
  fails; a body shorter than its Content-Length (the server died mid-body) is "short", not
  a "checksum mismatch".
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from typing import IO, Any

DEFAULT_MAX_BYTES = 1 << 40
AUTH = "Authorization"


class FetchRefused(Exception):
    """One line: why this source or response is not fetched."""


def allow_http(environ: dict[str, str] | os._Environ[str]) -> bool:
    return environ.get("ATLAS_ALLOW_HTTP") == "1"


def max_bytes(environ: dict[str, str] | os._Environ[str]) -> int:
    raw = environ.get("ATLAS_STAGE_MAX_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_BYTES


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def check_scheme(url: str, http_ok: bool, what: str = "source") -> None:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme == "https" or (scheme == "http" and http_ok):
        return
    url = redacted(url)
    if scheme == "http":
        raise FetchRefused(
            f"{what} {url} is plain http (credentials and data readable on the way): use https, "
            "or pass --allow-http (ATLAS_ALLOW_HTTP=1 in the cluster) for a trusted network"
        )
    raise FetchRefused(f"{what} {url}: only https:// (or http:// with --allow-http) is fetched")


class _OriginBoundRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects, re-sending the credential only to the origin it was given for."""

    def __init__(self, first_url: str, credential: str | None, http_ok: bool) -> None:
        self.origin, self.credential, self.http_ok = origin(first_url), credential, http_ok

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        try:
            check_scheme(newurl, self.http_ok and self.origin[0] == "http", "redirect to")
        except FetchRefused as exc:
            raise urllib.error.URLError(str(exc)) from None
        new.remove_header(AUTH)
        if self.credential and origin(newurl) == self.origin:
            new.add_header(AUTH, self.credential)
        return new


def redacted(url: str) -> str:
    """`url` with any user:password@ replaced by ***@, fit to print."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def check_credentials(url: str, headers: dict[str, str]) -> None:
    """Refuse credentials in the URL (printed by every log line naming it) and a header value
    with a line break or control character (it would split the request); neither is printed."""
    if "@" in urllib.parse.urlsplit(url).netloc:
        raise FetchRefused(
            f"source {redacted(url)} carries a user name or password (user:password@): it is not sent and "
            "would be printed in logs; remove it from the URL and give ATLAS_SOURCE_AUTHORIZATION "
            "(e.g. 'Basic <base64 of user:password>') instead"
        )
    for name, value in headers.items():
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            which = "ATLAS_SOURCE_AUTHORIZATION" if name.lower() == AUTH.lower() else f"the {name} header"
            raise FetchRefused(
                f"{which} holds a line break or control character (it would split the request): give the "
                "header value on one line, e.g. 'Bearer TOKEN'; it was not sent"
            )


def open_url(url: str, headers: dict[str, str], environ: dict[str, str] | os._Environ[str]) -> IO[bytes]:
    """GET `url`: https only (unless allowed), no credentials in the URL, the Authorization
    header only to its origin."""
    check_credentials(url, headers)
    http_ok = allow_http(environ)
    check_scheme(url, http_ok)
    credential = next((v for k, v in headers.items() if k.lower() == AUTH.lower()), None)
    opener = urllib.request.build_opener(_OriginBoundRedirects(url, credential, http_ok))
    try:
        return opener.open(urllib.request.Request(url, headers=headers), timeout=60)
    except urllib.error.HTTPError as exc:
        raise FetchRefused(f"{redacted(url)}: the server answered {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise FetchRefused(f"{redacted(url)}: {exc.reason}") from None


def announced_length(stream: IO[bytes]) -> int | None:
    """The Content-Length a response announced (None for a file or a chunked body)."""
    getheader = getattr(stream, "getheader", None)
    value = getheader("Content-Length") if getheader else None
    return int(value) if isinstance(value, str) and value.isdigit() else None


def check_length(source: str, announced: int | None, size: int | None, cap: int) -> int:
    """The most bytes to read from `source`; FetchRefused when the announced length is
    not the expected size or is over the cap, before anything is read."""
    if size is not None and announced is not None and announced != size:
        raise FetchRefused(f"{source} announces {announced} bytes, data.size says {size}: not fetched")
    limit = size if size is not None else cap
    if announced is not None and announced > limit:
        raise FetchRefused(f"{source} announces {announced} bytes, over the cap of {limit} (ATLAS_STAGE_MAX_BYTES)")
    return limit
