"""Exit codes of the ``sluice`` CLI: a stable contract for scripts (docs/operator-guide.md).

Each domain error class maps to one code, so a script can tell "fix your YAML" (3) from
"somebody changed the intent first, re-run" (4) from "the API is down" (7) without parsing
text. ``CHANGES`` follows terraform's ``-detailed-exitcode``: success, and there is something
to apply.
"""

from __future__ import annotations

from enum import IntEnum

from controller.errors import (
    ApiUnreachable,
    Conflict,
    Forbidden,
    IntentInvalid,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
    PrometheusUnreachable,
    Unauthenticated,
)


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2  # click's own code for bad options/arguments; we reuse it, never redefine it
    INVALID_INTENT = 3
    CONFLICT = 4
    AUTH = 5
    NOT_FOUND = 6
    UNREACHABLE = 7
    HOSTS_FAILED = 8  # sluice hosts: a host failed or was unreachable, or the rollout stopped
    CHANGES = 10
    ROLLOUT_NOT_CLEAN = 11  # sluice rollout watch: halted, switches unverified, or rolled back
    ROLLOUT_PAUSED = 12  # sluice rollout watch: paused, waiting for `sluice rollout resume`
    NOT_RELEASED = 13  # sluice release --wait: the worker could not release the switch
    CHECK_FAILED = 14  # sluice check roce: the fabric has findings


# Most specific class first is not needed: the classes are siblings under SluiceError.
_CODE_BY_ERROR: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (IntentInvalid, ExitCode.INVALID_INTENT),
    (Conflict, ExitCode.CONFLICT),
    (PreconditionFailed, ExitCode.CONFLICT),
    (PreconditionRequired, ExitCode.CONFLICT),
    (Unauthenticated, ExitCode.AUTH),
    (Forbidden, ExitCode.AUTH),
    (NotFound, ExitCode.NOT_FOUND),
    (ApiUnreachable, ExitCode.UNREACHABLE),
    (PrometheusUnreachable, ExitCode.UNREACHABLE),  # the API is up; its telemetry store is not
)


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code a failed command ends with; anything unforeseen is ``UNEXPECTED``."""
    for error_class, code in _CODE_BY_ERROR:
        if isinstance(error, error_class):
            return code
    return ExitCode.UNEXPECTED


def changes_exit_code(has_changes: bool, *, detailed: bool) -> ExitCode:
    """``--exit-code``: 10 when a diff/plan has changes, 0 when it is empty or not asked."""
    return ExitCode.CHANGES if (detailed and has_changes) else ExitCode.OK
