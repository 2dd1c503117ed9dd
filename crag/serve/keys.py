"""Who may call `crag serve`: a keys file (`crag serve --keys FILE`, $CRAG_API_KEYS) of one `user key` a line,
and $CRAG_API_KEY, one key of a user named "default". Each request is tied to the user whose key it sends."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

DEFAULT_USER = "default"  # the user of $CRAG_API_KEY; a keys file cannot name a user so
USER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # never "/": a thread's key is user/thread_id
KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,256}")  # what an HTTP header and a Bearer token carry
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class KeysError(ValueError):
    """A keys file that cannot be used; the message says why and how to fix it."""


def parse_keys(text: str, source: str = "the keys file") -> dict[str, str]:
    """{user: key} from a keys file's text: `user key` a line, blank lines and `#` comment lines allowed.
    `KeysError` names the first malformed line, a repeated user or key, or a file with no key at all."""
    keys: dict[str, str] = {}
    owners: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        where = f"{source}, line {number}"
        if len(fields) != 2:
            raise KeysError(f"{where}: expected `user key`, got {len(fields)} field(s)")
        user, key = fields
        if not USER.fullmatch(user):
            raise KeysError(
                f"{where}: invalid user name {user[:70]!r}: use 1-64 letters, digits or . _ @ -, starting with a "
                "letter or digit"
            )
        if user == DEFAULT_USER:
            raise KeysError(f"{where}: the user name {DEFAULT_USER!r} is $CRAG_API_KEY's: choose another")
        if not KEY.fullmatch(key):
            raise KeysError(
                f"{where}: the key of {user!r} must be 16-256 letters, digits or . _ ~ + / = - "
                "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        if user in keys:
            raise KeysError(f"{where}: user {user!r} is listed twice")
        if key in owners:
            raise KeysError(f"{where}: {user!r} has the same key as {owners[key]!r}: every user needs their own")
        keys[user], owners[key] = key, user
    if not keys:
        raise KeysError(f"{source} lists no key: write one `user key` a line")
    return keys


def load_keys(path: str | os.PathLike) -> dict[str, str]:
    """{user: key} from a keys file only its owner can read (`KeysError` for one that is missing, a folder,
    readable by others or malformed)."""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        if not stat.S_ISREG(mode):
            raise KeysError(f"the keys file {file} is not a file")
        if mode & 0o077:
            raise KeysError(
                f"the keys file {file} can be read or written by others (mode {stat.S_IMODE(mode):04o}): "
                f"run chmod 600 {file}"
            )
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeysError(f"the keys file {file} does not exist (--keys, $CRAG_API_KEYS)") from None
    except UnicodeDecodeError:
        raise KeysError(f"the keys file {file} is not UTF-8 text") from None
    except OSError as exc:
        raise KeysError(f"cannot read the keys file {file}: {exc.strerror or exc}") from exc
    return parse_keys(text, str(file))


def identities(api_key: str | None, keys_file: str | os.PathLike | None) -> dict[str, str]:
    """Every user's key: the keys file's, and $CRAG_API_KEY's as user "default"; {} when there are none."""
    keys = load_keys(keys_file) if keys_file else {}
    if api_key:
        same = [user for user, key in keys.items() if key == api_key]
        if same:
            raise KeysError(
                f"$CRAG_API_KEY is also the key of {same[0]!r} in the keys file: every user needs their own"
            )
        keys = {DEFAULT_USER: api_key, **keys}
    return keys


def supplied_key(headers: dict[bytes, bytes]) -> bytes | None:
    """The key a request sends, as X-API-Key or Authorization: Bearer."""
    supplied = headers.get(b"x-api-key")
    if supplied is None:
        scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
        supplied = token.strip() if scheme.lower() == b"bearer" else None
    return supplied


def is_local(host: str) -> bool:
    return host.strip("[]") in LOCAL_HOSTS


class Users:
    """Finds the user of a key in constant time: every key is compared, each as a digest of one length."""

    def __init__(self, keys: Mapping[str, str]):
        self._digests = [(user, _digest(key.encode())) for user, key in keys.items()]

    def __bool__(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def user_of(self, supplied: bytes | None) -> str | None:
        if not supplied:
            return None
        digest, found = _digest(supplied), None
        for user, known in self._digests:  # no early exit: the time does not say which key nearly matched
            if hmac.compare_digest(digest, known) and found is None:
                found = user
        return found


def _digest(key: bytes) -> bytes:
    return hashlib.sha256(b"crag-api-key:" + key).digest()
