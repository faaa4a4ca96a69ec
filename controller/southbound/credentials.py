"""gNMI credentials from a ``credential_ref`` (``env:NAME`` or ``file:/path``).

The intent stores only where a secret lives (``controller.intent.models.Switch``); the
secret is fetched here, right before a session needs it, wrapped in ``SecretStr`` so it
never shows in a repr, a log line or an error. Where to read from is passed in, so tests
and callers decide the environment and the file system.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import SecretStr

from controller.errors import NotFound

SecretResolver = Callable[[str], SecretStr]


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def resolve_secret(
    ref: str,
    *,
    environ: Mapping[str, str],
    read_text: Callable[[Path], str] = _read_text,
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
    raise NotFound(f"credential {ref}: scheme {scheme!r} is not supported here (env, file)")


def environment_resolver(environ: Mapping[str, str]) -> SecretResolver:
    """A resolver over ``environ`` and the real file system (the usual one in a process)."""

    def resolve(ref: str) -> SecretStr:
        return resolve_secret(ref, environ=environ)

    return resolve
