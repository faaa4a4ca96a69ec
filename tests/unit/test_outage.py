"""Telling a database outage from a bug, and the backoff the worker waits with."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import exc as sa_exc

from controller.store.outage import Backoff, is_database_outage, outage_summary


def test_backoff_doubles_up_to_its_cap_and_reports_each_state_change_once() -> None:
    backoff = Backoff(first_s=0.5, cap_s=3.0)
    delays, starts = zip(*(backoff.failed() for _ in range(6)), strict=True)
    assert delays == (0.5, 1.0, 2.0, 3.0, 3.0, 3.0)
    assert starts == (True, False, False, False, False, False)
    assert backoff.down
    assert backoff.failures == 6
    assert backoff.succeeded() is True  # the outage ended: one recovery line
    assert backoff.succeeded() is False  # and no further one
    assert backoff.failed() == (0.5, True)  # a new outage starts from the first delay


def _wrapped(orig: Exception) -> BaseException:
    """``orig`` as SQLAlchemy raises it from a statement (the driver error as ``orig``)."""
    try:
        raise orig
    except Exception as error:
        return sa_exc.DBAPIError.instance("SELECT 1", {}, error, Exception)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(psycopg.OperationalError("connection refused")),
        sa_exc.TimeoutError("QueuePool limit reached"),
        ConnectionResetError("reset by peer"),
    ],
    ids=["operational", "pool-timeout", "reset"],
)
def test_outages_are_recognised(error: BaseException) -> None:
    assert is_database_outage(error)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(psycopg.errors.UniqueViolation("duplicate key")),
        ValueError("a bug"),
        KeyError("x"),
    ],
    ids=["integrity", "value-error", "key-error"],
)
def test_bugs_and_refusals_are_not_outages(error: BaseException) -> None:
    assert not is_database_outage(error)


def test_the_summary_is_one_line_without_the_statement() -> None:
    error = _wrapped(psycopg.OperationalError("server closed the connection\nunexpectedly"))
    assert outage_summary(error) == "server closed the connection"
