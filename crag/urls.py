"""What a configured service URL must be: checked once, where it is given (a setting, a backend's constructor)."""

from __future__ import annotations

from urllib.parse import urlsplit


def check_api_url(url: str, setting: str) -> str:
    """`url` stripped if it is an http(s) URL with a host and no credentials, else a ValueError naming `setting`."""
    url = url.strip()
    parts = urlsplit(url)
    if "@" in parts.netloc:  # said without the URL: it holds a password
        raise ValueError(f"{setting} must not hold credentials")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{setting} must be an http or https URL with a host, got {url!r}")
    return url
