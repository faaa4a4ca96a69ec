"""Adoption records over PostgreSQL: the ``Adoptions`` a converge reads and writes
(``controller/rollout/switches.py``), shared by the rollout runner's store and releases."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.sonic.model import SwitchConfig
from controller.store.repositories import adoptions
from controller.store.snapshots import decode_config, encode_config
from controller.types import Clock


class SqlAdoptions:
    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    def baseline(self, switch: str) -> SwitchConfig | None:
        with self._sessions() as session:
            row = adoptions.active(session=session, switch_name=switch)
            return None if row is None else decode_config(row.baseline)

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None:
        """Record the switch adopted with ``baseline``, unless it already is (a second
        worker that raced this one recorded the same read first)."""
        try:
            with self._sessions.begin() as session:
                if adoptions.active(session=session, switch_name=switch) is None:
                    adoptions.insert(
                        session=session,
                        switch_name=switch,
                        baseline=encode_config(baseline),
                        at=self._clock(),
                        by=by,
                    )
        except IntegrityError:
            pass  # the partial unique index: another record became active first

    def release(self, switch: str, by: str) -> None:
        with self._sessions.begin() as session:
            adoptions.mark_released(session=session, switch_name=switch, at=self._clock(), by=by)


@dataclass(frozen=True)
class AdoptionState:
    """What the records say of some switches: those sluice released (it manages them again
    only once a rollout adopts them anew), and each adopted one's record id and baseline."""

    released: frozenset[str]
    ids: dict[str, int]
    baselines: dict[str, SwitchConfig]


def adoption_state(session: Session, switches: Collection[str]) -> AdoptionState:
    rows = adoptions.latest(session=session, switches=switches)
    active = {name: row for name, row in rows.items() if row.released_at is None}
    return AdoptionState(
        frozenset(name for name, row in rows.items() if row.released_at is not None),
        {name: row.id for name, row in active.items()},
        {name: decode_config(row.baseline) for name, row in active.items()},
    )
