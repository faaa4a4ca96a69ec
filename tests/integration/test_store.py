"""Repositories against a real, migrated PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.store.db import make_engine, make_sessions
from controller.store.models import UQ_INTENT_VERSION_NUMBER, UQ_TOKEN_ACTIVE_NAME
from controller.store.repositories import discoveries, intents, states, tokens
from controller.types import JsonObject

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_sessions(engine)


def _version(session: Session, number: int) -> None:
    intents.insert_version(
        session=session,
        number=number,
        intent={"n": number},
        content_sha256="0" * 64,
        author="alice",
        reason=f"v{number}",
        created_at=T0,
    )


def test_head_is_zero_then_the_newest_number(sessions: sessionmaker[Session]) -> None:
    with sessions.begin() as session:
        assert intents.head_number(session=session) == 0
        _version(session, 1)
        _version(session, 2)
    with sessions.begin() as session:
        assert intents.head_number(session=session) == 2
        latest = intents.latest_version(session=session)
        assert latest is not None
        assert latest.intent == {"n": 2}
        page, total = intents.list_versions(session=session, limit=1, offset=1)
        assert total == 2
        assert [v.number for v in page] == [1]


def test_a_version_number_cannot_be_stored_twice(sessions: sessionmaker[Session]) -> None:
    with sessions.begin() as session:
        _version(session, 1)
    with pytest.raises(IntegrityError) as caught, sessions.begin() as session:
        _version(session, 1)
    assert UQ_INTENT_VERSION_NUMBER in str(caught.value)


def test_desired_states_are_read_per_version_and_switch(sessions: sessionmaker[Session]) -> None:
    with sessions.begin() as session:
        _version(session, 1)
        intents.insert_desired_states(
            session=session,
            version=1,
            configs={"leaf1": {"QUEUE|Ethernet0|3": {"scheduler": "S"}}, "leaf2": {}},
        )
    with sessions.begin() as session:
        both = intents.desired_states(session=session, version=1)
        one = intents.desired_states(session=session, version=1, switches=["leaf2"])
        none = intents.desired_states(session=session, version=2)
    assert both == {"leaf1": {"QUEUE|Ethernet0|3": {"scheduler": "S"}}, "leaf2": {}}
    assert one == {"leaf2": {}}
    assert none == {}


def test_latest_running_state_per_switch_wins(sessions: sessionmaker[Session]) -> None:
    with sessions.begin() as session:
        for offset, switch, marker in [(0, "a", "old"), (5, "a", "new"), (1, "b", "only")]:
            states.record_running_state(
                session=session,
                switch_name=switch,
                config={"X|k": {"v": marker}},
                recorded_at=T0 + timedelta(seconds=offset),
                source="test",
            )
    with sessions.begin() as session:
        latest = states.latest_running_states(session=session)
        only_b = states.latest_running_states(session=session, switches=["b"])
    assert latest == {"a": {"X|k": {"v": "new"}}, "b": {"X|k": {"v": "only"}}}
    assert only_b == {"b": {"X|k": {"v": "only"}}}


def test_token_names_are_unique_among_active_tokens_only(
    sessions: sessionmaker[Session],
) -> None:
    with sessions.begin() as session:
        first = tokens.insert_token(
            session=session, name="ci", role="viewer", token_sha256="a" * 64, created_at=T0
        )
    with pytest.raises(IntegrityError) as caught, sessions.begin() as session:
        tokens.insert_token(
            session=session, name="ci", role="viewer", token_sha256="b" * 64, created_at=T0
        )
    assert UQ_TOKEN_ACTIVE_NAME in str(caught.value)
    with sessions.begin() as session:
        row = tokens.get_token(session=session, token_id=first.id)
        assert row is not None
        tokens.revoke_token(session=session, token=row, at=T0)
        tokens.insert_token(
            session=session, name="ci", role="admin", token_sha256="c" * 64, created_at=T0
        )
    with sessions.begin() as session:
        assert tokens.find_active_by_hash(session=session, token_sha256="a" * 64) is None
        active = tokens.find_active_by_hash(session=session, token_sha256="c" * 64)
        assert active is not None
        assert active.role == "admin"


def _discovery(session: Session, finished: datetime | None, switches: list[JsonObject]) -> None:
    row = discoveries.insert(
        session=session, request={}, requested_by="alice", request_id="r", at=T0
    )
    if finished is not None:
        result: JsonObject = {"switches": switches, "topology": []}
        discoveries.finish(session=session, discovery_id=row.id, result=result, at=finished)


def test_each_switch_s_newest_finding_that_reached_it(sessions: sessionmaker[Session]) -> None:
    late = T0 + timedelta(minutes=5)
    with sessions.begin() as session:
        _discovery(session, T0, [{"switch": "leaf1", "n": 1}, {"switch": "leaf2", "n": 1}])
        # Newer: leaf1 found again, leaf2 not reached (its older finding stands).
        unreached = {"switch": "leaf2", "n": 2, "error": "unreachable"}
        _discovery(session, late, [{"switch": "leaf1", "n": 2}, unreached])
        # Finished at the same time as the one before, stored after it: the later id wins.
        _discovery(session, late, [{"switch": "spine1", "n": 3}, {"switch": "leaf1", "n": 3}])
        _discovery(session, None, [])  # still pending: finds nothing
    with sessions.begin() as session:
        found = discoveries.latest_found(
            session=session, switches=["leaf1", "leaf2", "spine1", "spine2"]
        )
    assert {name: item["n"] for name, item in found.items()} == {
        "leaf1": 3, "leaf2": 1, "spine1": 3,
    }  # fmt: skip
    assert found["leaf2"] == {"switch": "leaf2", "n": 1}
    with sessions.begin() as session:
        assert discoveries.latest_found(session=session, switches=[]) == {}
