"""gNMI passwords from a secret reference: ``env:NAME``, ``file:/path`` or
``vault:mount/path#field`` (a KV version 2 secret in Vault or OpenBao).

The intent stores only where a secret lives (``controller.intent.models``: a switch's own
``credential_ref``, or its group's ``secret_ref``); the secret is fetched here, right before a
session needs it, wrapped in ``SecretStr`` so it never shows in a repr, a log line or an
error. Errors name the reference and what went wrong, never a value. Where to read from is
passed in (the environment, the file reader, the secret store's HTTP client), so tests and
callers decide.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import SecretStr

from controller.errors import NotFound

SecretResolver = Callable[[str], SecretStr]
# The field a vault: reference reads when it names none (vault:secret/fabric/leaf1).
VAULT_DEFAULT_FIELD = "password"


class SecretStore(Protocol):
    def read(self, where: str) -> SecretStr:
        """The secret at ``where`` (``mount/path#field``); ``NotFound`` naming ``where``."""
        ...


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def resolve_secret(
    ref: str,
    *,
    environ: Mapping[str, str],
    read_text: Callable[[Path], str] = _read_text,
    vault: SecretStore | None = None,
) -> SecretStr:
    """The secret ``ref`` points at. A file's trailing newline is dropped (editors add one).
    Errors name the reference, never its value."""
    scheme, sep, where = ref.partition(":")
    if not sep or not where:
        raise NotFound(f"credential reference {ref!r} is not scheme:location")
    if scheme == "env":
        value = environ.get(where)
        if value is None:
            raise NotFound(f"credential {ref}: environment variable {where} is not set")
        return SecretStr(value)
    if scheme == "file":
        try:
            return SecretStr(read_text(Path(where)).rstrip("\r\n"))
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise NotFound(f"credential {ref}: cannot read the file ({reason})") from None
    if scheme == "vault":
        if vault is None:
            raise NotFound(f"credential {ref}: no secret store is set (SLUICE_VAULT_ADDR)")
        return vault.read(where)
    raise NotFound(f"credential {ref}: scheme {scheme!r} is not supported (env, file, vault)")


def secret_resolver(environ: Mapping[str, str], vault: SecretStore | None = None) -> SecretResolver:
    """A resolver over ``environ``, the real file system and ``vault`` (if one is set)."""

    def resolve(ref: str) -> SecretStr:
        return resolve_secret(ref, environ=environ, vault=vault)

    return resolve


def environment_resolver(environ: Mapping[str, str]) -> SecretResolver:
    """A resolver over ``environ`` and the real file system, with no secret store."""
    return secret_resolver(environ)


@dataclass
class VaultKv:
    """Secrets from a KV version 2 engine over the HTTP API Vault and OpenBao share
    (``GET /v1/<mount>/data/<path>``, the token in ``X-Vault-Token``): ``mount/path#field``.

    ``token`` is called for each read, so a token file an agent rotates is re-read; a secret
    read is kept ``cache_s`` seconds (``clock``) so a reconcile pass over many switches of
    one group asks the store once."""

    address: str
    token: Callable[[], SecretStr] = field(repr=False)
    http: httpx.Client = field(repr=False)
    cache_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _cache: dict[str, tuple[float, dict[str, object]]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self, where: str) -> SecretStr:
        path, _, wanted = where.partition("#")
        wanted = wanted or VAULT_DEFAULT_FIELD
        ref = f"vault:{where}"
        fields = self._fields(path, ref)
        value = fields.get(wanted)
        if not isinstance(value, str):
            names = ", ".join(sorted(fields)) or "none"
            raise NotFound(f"credential {ref}: the secret has no text field {wanted!r} ({names})")
        return SecretStr(value)

    def _fields(self, path: str, ref: str) -> dict[str, object]:
        now = self.clock()
        with self._lock:
            cached = self._cache.get(path)
            if cached is not None and now - cached[0] < self.cache_s:
                return cached[1]
        fields = self._fetch(path, ref)
        with self._lock:
            self._cache[path] = (now, fields)
        return fields

    def _fetch(self, path: str, ref: str) -> dict[str, object]:
        mount, _, rest = path.partition("/")
        url = f"{self.address.rstrip('/')}/v1/{mount}/data/{rest}"
        try:
            answer = self.http.get(url, headers={"X-Vault-Token": self.token().get_secret_value()})
        except httpx.HTTPError as error:
            raise NotFound(
                f"credential {ref}: the secret store at {self.address} does not answer "
                f"({type(error).__name__})"
            ) from None
        if answer.status_code == 404:
            raise NotFound(f"credential {ref}: no secret at {path} in the store")
        if answer.status_code == 403:
            raise NotFound(f"credential {ref}: the store's token may not read {path} (403)")
        if answer.status_code != 200:
            raise NotFound(f"credential {ref}: the store answered {answer.status_code}")
        try:
            fields = answer.json()["data"]["data"]
        except (ValueError, KeyError, TypeError):
            fields = None
        if not isinstance(fields, dict):
            raise NotFound(f"credential {ref}: the store's answer is not a KV version 2 secret")
        return fields


def token_reader(token: SecretStr | None, token_file: Path | None) -> Callable[[], SecretStr]:
    """The store's token: given directly, or read from a file at each use (an agent's
    sink rotates it); ``NotFound`` when neither is set or the file cannot be read."""

    def read() -> SecretStr:
        if token is not None:
            return token
        if token_file is None:
            raise NotFound("the secret store has no token (SLUICE_VAULT_TOKEN or _TOKEN_FILE)")
        try:
            return SecretStr(token_file.read_text(encoding="utf-8").strip())
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise NotFound(f"cannot read the secret store's token file ({reason})") from None

    return read
