"""URL helpers every policy client shares: a URL safe to show, and a URL's credentials."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit


def safe_url(url: str) -> str:
    """The URL without user:password@ and without a query string."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def split_userinfo(url: str) -> tuple[str, str | None]:
    """`url` without its `user:password@`, and the `Basic ...` Authorization value they
    make (None when the URL carries none). Percent-escapes in them are decoded first, as
    httpx and browsers do (`p%40ss` is the password `p@ss`).

    HTTP clients will not send a URL's credentials next to an Authorization header (aiohttp
    refuses, httpx silently drops the header), so the policy clients send them themselves.
    """
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, None
    bare = urlunsplit(parts._replace(netloc=hostport))
    if not userinfo:
        return bare, None
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    return bare, "Basic " + base64.b64encode(pair).decode("ascii")


def url_passwords(url: str) -> list[str]:
    """The URL's password, as written and decoded (for scrubbing error messages)."""
    password = urlsplit(url).password
    return [password, unquote(password)] if password else []
