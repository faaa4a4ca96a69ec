"""Typed domain errors.

Every error the core raises is one of these. The API maps each class to an HTTP status and a
problem+json body (``api/errors.py``); the CLI maps them to exit codes. Messages never carry
secrets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One reason a field was refused: ``path`` is dotted (``service_classes[2].dscp``)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class SluiceError(Exception):
    """Base of every domain error; ``title`` is the short, stable problem title."""

    title = "sluice error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class IntentInvalid(SluiceError):
    """The intent (or a part of it) breaks a rule; ``problems`` name each field and reason."""

    title = "invalid intent"

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


class NotFound(SluiceError):
    title = "not found"


class Conflict(SluiceError):
    """The request conflicts with the current state (e.g. a concurrent intent update)."""

    title = "conflict"


class PreconditionFailed(SluiceError):
    """An If-Match precondition no longer holds: somebody changed the intent first."""

    title = "precondition failed"


class PreconditionRequired(SluiceError):
    title = "precondition required"


class Unauthenticated(SluiceError):
    title = "unauthenticated"


class Forbidden(SluiceError):
    title = "forbidden"


class ApiUnreachable(SluiceError):
    """A client got no answer from the REST API (refused, timed out, name not resolved)."""

    title = "API unreachable"
