"""Twin runs: the API records a request to run an intent version (and, to compare, a second
one) in the packet-level twin; the worker claims it, runs the twin on each version
(``controller/twin``, over netsim), relays netsim's progress into the row and stores the result.

The API only records (a run takes seconds to minutes of CPU); ``GET /twin-runs/{id}``
shows the state, the last progress line and, once completed, the result: FCT per class and
per size bucket for each version, the deltas when comparing, and what the twin does not model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from controller.errors import FieldProblem, IntentInvalid, NotFound
from controller.intent.models import Intent
from controller.services.common import Actor
from controller.store.models import TwinRun
from controller.store.repositories import intents
from controller.twin.results import compare
from controller.twin.runner import NetsimFailed, run_twin
from controller.twin.translate import Request, TwinInputInvalid, check_request
from controller.types import Clock

JsonObject = dict[str, Any]
# What a twin run is requested with, as the API builds it (the twin's own ``Request``).
TwinRequest = Request
# (intent, request, on_progress) -> result: controller.twin.runner.run_twin bound to a binary.
RunTwin = Callable[[Intent, Request, Callable[[str], None]], JsonObject]


@dataclass(frozen=True, slots=True)
class TwinRunView:
    id: int
    state: str
    intent_version: int
    compare_version: int | None
    request: JsonObject
    progress: str | None
    result: JsonObject | None
    message: str | None
    requested_by: str
    requested_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


def _view(row: TwinRun) -> TwinRunView:
    return TwinRunView(
        row.id,
        row.state,
        row.intent_version,
        row.compare_version,
        dict(row.request),
        row.progress,
        None if row.result is None else dict(row.result),
        row.message,
        row.requested_by,
        row.requested_at,
        row.started_at,
        row.finished_at,
    )


def request_of(data: JsonObject) -> Request:
    mix = tuple((str(name), float(share)) for name, share in data.get("mix", []))
    return Request(data["workload"], data["load"], data["flows"], data["seed"], mix)


def _stored(request: Request) -> JsonObject:
    data = asdict(request)
    data["mix"] = [list(pair) for pair in request.mix]
    return data


def _intent_at(session: Session, version: int) -> Intent:
    row = intents.get_version(session=session, number=version)
    if row is None:
        raise NotFound(f"intent version {version} does not exist")
    return Intent.model_validate(row.intent)


class TwinRunService:
    """The API's side: record a request, read one back."""

    def __init__(self, sessions: sessionmaker[Session], *, clock: Clock) -> None:
        self._sessions = sessions
        self._clock = clock

    def request(
        self,
        *,
        actor: Actor,
        request: Request,
        version: int | None = None,
        compare_version: int | None = None,
    ) -> TwinRunView:
        """Record a run of ``version`` (default: the current intent) and, if given, of
        ``compare_version`` on the same flows. Refuses a request the twin cannot run."""
        try:
            check_request(request)
        except TwinInputInvalid as error:
            raise IntentInvalid([FieldProblem("twin_run", str(error))]) from error
        with self._sessions.begin() as session:
            if version is None:
                latest = intents.latest_version(session=session)
                if latest is None:
                    raise NotFound("there is no intent to run in the twin yet")
                version = latest.number
            names = {c.name for c in _intent_at(session, version).service_classes}
            if compare_version is not None:
                names &= {c.name for c in _intent_at(session, compare_version).service_classes}
            unknown = sorted({name for name, _ in request.mix} - names)
            if unknown:
                reason = f"names classes not in the intent: {', '.join(unknown)}"
                raise IntentInvalid([FieldProblem("mix", reason)])
            row = TwinRun(
                state="pending",
                intent_version=version,
                compare_version=compare_version,
                request=_stored(request),
                requested_by=actor.name,
                requested_at=self._clock(),
            )
            session.add(row)
            session.flush()
            return _view(row)

    def get(self, twin_run_id: int) -> TwinRunView:
        with self._sessions() as session:
            row = session.get(TwinRun, twin_run_id)
            if row is None:
                raise NotFound(f"twin run {twin_run_id} does not exist")
            return _view(row)


class TwinRunRunner:
    """The worker's side: claim the oldest pending request, run it, store the result.

    A run still ``running`` after ``stale_after`` was left by a worker that stopped (every
    netsim run is killed at its timeout, so no live run is that old): it is claimed again.
    Runs are deterministic, so running one again gives the same result."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        run_twin: RunTwin,
        *,
        clock: Clock,
        stale_after: timedelta,
    ) -> None:
        self._sessions = sessions
        self._run_twin = run_twin
        self._clock = clock
        self._stale_after = stale_after

    def _claim(self) -> TwinRun | None:
        now = self._clock()
        left = (TwinRun.state == "running") & (TwinRun.started_at < now - self._stale_after)
        with self._sessions.begin() as session:
            found = session.scalars(
                select(TwinRun)
                .where((TwinRun.state == "pending") | left)
                .order_by(TwinRun.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if found is None:
                return None
            found.state = "running"
            found.started_at = now
            session.flush()
            session.expunge(found)
            return found

    def _set(self, twin_run_id: int, **values: Any) -> None:
        with self._sessions.begin() as session:
            session.execute(update(TwinRun).where(TwinRun.id == twin_run_id).values(**values))

    def run_once(self) -> int:
        """Run one pending twin run (1), or none is pending (0)."""
        row = self._claim()
        if row is None:
            return 0
        request = request_of(row.request)

        def progress(prefix: str) -> Callable[[str], None]:
            return lambda line: self._set(row.id, progress=f"{prefix}{line}")

        try:
            with self._sessions() as session:
                before_intent = _intent_at(session, row.intent_version)
                after_intent = (
                    None
                    if row.compare_version is None
                    else _intent_at(session, row.compare_version)
                )
            before = self._run_twin(before_intent, request, progress(f"v{row.intent_version}: "))
            result: JsonObject = {"result": before}
            if after_intent is not None:
                after = self._run_twin(after_intent, request, progress(f"v{row.compare_version}: "))
                result = {"result": before, "compare": after, "delta": compare(before, after)}
        except (NetsimFailed, TwinInputInvalid, NotFound) as error:
            self._set(row.id, state="error", message=str(error), finished_at=self._clock())
            return 1
        self._set(row.id, state="completed", result=result, finished_at=self._clock())
        return 1


def run_twin_with(binary: Path, timeout_s: float) -> RunTwin:
    """``controller.twin.runner.run_twin`` over ``binary``."""

    def run(intent: Intent, request: Request, on_progress: Callable[[str], None]) -> JsonObject:
        return run_twin(intent, request, binary, timeout_s=timeout_s, on_progress=on_progress)

    return run
