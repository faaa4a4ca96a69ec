"""Intent versions: read the current intent, and change it (whole or one resource at a time).

Every change is a new version with author, time and reason, the compiled desired state of
every switch at that version, and one audit row with the resource before and after.

Optimistic concurrency: a writer names the version it read (``expected``). Writers queue on
one transaction-scoped lock, then compare ``expected`` with the head they see; the first
wins and the next gets ``PreconditionFailed`` (it read a version that is no longer the head),
so no change is lost and no number is used twice. The unique version number is the backstop.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import partial

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from controller.accept import accept_sized
from controller.errors import Conflict, FieldProblem, IntentInvalid, NotFound, PreconditionFailed
from controller.intent.loader import dump_intent
from controller.intent.models import Intent
from controller.intent.validate import AddressResolver
from controller.services.audit import record_change
from controller.services.coexistence import fabric_discoveries
from controller.services.common import Actor, Page
from controller.sonic.cables import has_lossless
from controller.store.models import UQ_INTENT_VERSION_NUMBER, IntentVersion
from controller.store.repositories import intents
from controller.store.snapshots import encode_config
from controller.types import Clock, JsonObject

NO_INTENT_YET = "no intent has been stored yet"


class ResourceKind(StrEnum):
    """The named lists of the intent that the API edits one entry at a time."""

    SWITCH = "switches"
    HOST = "hosts"
    SERVICE_CLASS = "service_classes"

    @property
    def audit_type(self) -> str:
        return {"switches": "switch", "hosts": "host", "service_classes": "service_class"}[
            self.value
        ]


@dataclass(frozen=True, slots=True)
class VersionInfo:
    number: int
    author: str
    reason: str
    created_at: datetime
    content_sha256: str
    # Set when a rollout of this version rolled back (controller/store/rejections.py).
    rejected_at: datetime | None = None
    rejected_by_rollout: int | None = None
    rejected_reason: str | None = None


@dataclass(frozen=True, slots=True)
class IntentRecord:
    """One stored version: its metadata, the model, and its JSON form (fields in model order)."""

    info: VersionInfo
    intent: Intent
    data: JsonObject


@dataclass(frozen=True, slots=True)
class WriteResult:
    """``changed`` is false when the write left the intent as it was (no new version);
    ``resource`` is the written entry as stored (defaults filled in), None after a delete."""

    version: VersionInfo
    changed: bool
    created: bool
    resource: JsonObject | None


@dataclass(frozen=True, slots=True)
class _Draft:
    """What a change proposes: the new intent data and what the audit row should say."""

    data: object
    action: str
    resource_type: str
    resource_id: str
    before: JsonObject | None
    created: bool = False


Change = Callable[[JsonObject | None], _Draft]


def content_sha256(data: JsonObject) -> str:
    """A digest of the canonical JSON: equal intents have equal digests."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class IntentService:
    """``resolve``: the DNS the endpoint rule compares switch and host names with (the API
    passes the system's, ``controller/southbound/resolve.py``; none: names by spelling)."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        clock: Clock,
        resolve: AddressResolver | None = None,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._resolve = resolve

    # -- reads ---------------------------------------------------------------------------------

    def head(self) -> int:
        """The current version number; 0 before the first intent is stored."""
        with self._sessions() as session:
            return intents.head_number(session=session)

    def current(self) -> IntentRecord:
        record = self.latest()
        if record is None:
            raise NotFound(NO_INTENT_YET)
        return record

    def latest(self) -> IntentRecord | None:
        """The current intent; None before the first is stored."""
        with self._sessions() as session:
            row = intents.latest_version(session=session)
            return None if row is None else _record(row)

    def version(self, number: int) -> IntentRecord:
        with self._sessions() as session:
            row = intents.get_version(session=session, number=number)
            if row is None:
                raise NotFound(f"intent version {number} does not exist")
            return _record(row)

    def versions(self, *, limit: int, offset: int) -> Page[VersionInfo]:
        with self._sessions() as session:
            rows, total = intents.list_versions(session=session, limit=limit, offset=offset)
            return Page([_info(row) for row in rows], total, limit, offset)

    def resources(self, kind: ResourceKind) -> tuple[int, list[JsonObject]]:
        """The current version number and that version's entries of ``kind`` (none at 0)."""
        with self._sessions() as session:
            row = intents.latest_version(session=session)
            if row is None:
                return 0, []
            record = _record(row)
        return record.info.number, list(record.data[kind.value])

    def resource(self, kind: ResourceKind, name: str) -> tuple[int, JsonObject]:
        number, entries = self.resources(kind)
        found = _find(entries, name)
        if found is None:
            raise NotFound(f"{kind.audit_type} {name!r} is not in the current intent")
        return number, entries[found]

    def fabric(self) -> tuple[int, JsonObject]:
        record = self.current()
        return record.info.number, dict(record.data["fabric"])

    def rejected_like(self, data: JsonObject) -> VersionInfo | None:
        """The newest rejected version whose content is ``data`` (an intent as stored), if
        any: what a rollout that rolled back refused."""
        with self._sessions() as session:
            row = intents.rejected_with_content(
                session=session, content_sha256=content_sha256(data)
            )
            return None if row is None else _info(row)

    def validate(self, data: object) -> JsonObject:
        """Every check a write makes (``accept_sized``), storing nothing: the intent as it
        would be stored (defaults filled); ``IntentInvalid`` if bad."""
        with self._sessions() as session:
            accepted = accept_sized(data, partial(fabric_discoveries, session), self._resolve)
        return dump_intent(accepted.intent)

    # -- writes --------------------------------------------------------------------------------

    def replace(self, data: object, *, expected: int, actor: Actor, reason: str) -> WriteResult:
        def change(current: JsonObject | None) -> _Draft:
            action = "create" if current is None else "replace"
            return _Draft(data, action, "intent", "intent", current, created=current is None)

        return self._write(change, expected=expected, actor=actor, reason=reason)

    def add_resource(
        self,
        kind: ResourceKind,
        data: Mapping[str, object],
        *,
        expected: int,
        actor: Actor,
        reason: str,
    ) -> WriteResult:
        name = str(data.get("name", ""))

        def change(current: JsonObject | None) -> _Draft:
            entries = _entries_of(current, kind)
            if _find(entries, name) is not None:
                raise Conflict(f"{kind.audit_type} {name!r} exists; replace it with PUT")
            new = {**_require(current), kind.value: [*entries, dict(data)]}
            return _Draft(new, "create", kind.audit_type, name, None, created=True)

        return self._write(change, expected=expected, actor=actor, reason=reason)

    def put_resource(
        self,
        kind: ResourceKind,
        name: str,
        data: Mapping[str, object],
        *,
        expected: int,
        actor: Actor,
        reason: str,
    ) -> WriteResult:
        body = _named(data, name)

        def change(current: JsonObject | None) -> _Draft:
            entries = _entries_of(current, kind)
            index = _find(entries, name)
            if index is None:
                new = {**_require(current), kind.value: [*entries, body]}
                return _Draft(new, "create", kind.audit_type, name, None, created=True)
            before = entries[index]
            entries[index] = body
            new = {**_require(current), kind.value: entries}
            return _Draft(new, "replace", kind.audit_type, name, before)

        return self._write(change, expected=expected, actor=actor, reason=reason)

    def delete_resource(
        self, kind: ResourceKind, name: str, *, expected: int, actor: Actor, reason: str
    ) -> WriteResult:
        def change(current: JsonObject | None) -> _Draft:
            entries = _entries_of(current, kind)
            index = _find(entries, name)
            if index is None:
                raise NotFound(f"{kind.audit_type} {name!r} is not in the current intent")
            before = entries.pop(index)
            new = {**_require(current), kind.value: entries}
            return _Draft(new, "delete", kind.audit_type, name, before)

        return self._write(change, expected=expected, actor=actor, reason=reason)

    def put_fabric(
        self, data: Mapping[str, object], *, expected: int, actor: Actor, reason: str
    ) -> WriteResult:
        """Set the fabric parameters; on an empty store this creates the first version."""

        def change(current: JsonObject | None) -> _Draft:
            if current is None:
                return _Draft({"fabric": dict(data)}, "create", "fabric", "fabric", None, True)
            new = {**current, "fabric": dict(data)}
            return _Draft(new, "replace", "fabric", "fabric", current["fabric"])

        return self._write(change, expected=expected, actor=actor, reason=reason)

    def _write(self, change: Change, *, expected: int, actor: Actor, reason: str) -> WriteResult:
        try:
            with self._sessions.begin() as session:
                return self._write_locked(session, change, expected, actor, reason)
        except IntegrityError as exc:
            if UQ_INTENT_VERSION_NUMBER in str(exc.orig):
                raise Conflict("another change took this version number; read and retry") from None
            raise

    def _write_locked(
        self, session: Session, change: Change, expected: int, actor: Actor, reason: str
    ) -> WriteResult:
        intents.lock_intent_writes(session=session)
        head = intents.latest_version(session=session)
        head_number = 0 if head is None else head.number
        if head_number != expected:
            raise PreconditionFailed(
                f"the intent is at version {head_number}, not {expected}; read it again and retry"
            )
        draft = change(None if head is None else dict(head.intent))
        # Lossless headroom is sized for the cables the switches reported when the version is
        # written: its desired state is what every rollout of it writes.
        accepted = accept_sized(draft.data, partial(fabric_discoveries, session), self._resolve)
        intent, compiled = accepted.intent, accepted.compiled
        content = dump_intent(intent)
        digest = content_sha256(content)
        after = _after(content, draft)
        desired = {name: encode_config(cfg) for name, cfg in compiled.items()}
        # The same intent is a new version only where the cables its lossless headroom is
        # sized for were discovered otherwise since the head was written.
        if (
            head is not None
            and head.content_sha256 == digest
            and (not has_lossless(intent) or _same_desired(session, head.number, desired))
        ):
            return WriteResult(_info(head), False, draft.created, after)
        now = self._clock()
        row = intents.insert_version(
            session=session,
            number=head_number + 1,
            intent=content,
            content_sha256=digest,
            author=actor.name,
            reason=reason,
            created_at=now,
        )
        intents.insert_desired_states(session=session, version=row.number, configs=desired)
        record_change(
            session,
            actor,
            draft.action,
            resource_type=draft.resource_type,
            resource_id=draft.resource_id,
            version=row.number,
            before=draft.before,
            after=after,
            at=now,
        )
        return WriteResult(_info(row), True, draft.created, after)


def _same_desired(session: Session, version: int, desired: Mapping[str, JsonObject]) -> bool:
    return intents.desired_states(session=session, version=version) == desired


def _info(row: IntentVersion) -> VersionInfo:
    return VersionInfo(
        row.number,
        row.author,
        row.reason,
        row.created_at,
        row.content_sha256,
        row.rejected_at,
        row.rejected_by_rollout,
        row.rejected_reason,
    )


def _record(row: IntentVersion) -> IntentRecord:
    # Re-dump through the model: JSONB reorders keys, the API should show model order.
    intent = Intent.model_validate(row.intent)
    return IntentRecord(_info(row), intent, dump_intent(intent))


def _find(entries: list[JsonObject], name: str) -> int | None:
    for index, entry in enumerate(entries):
        if entry.get("name") == name:
            return index
    return None


def _require(current: JsonObject | None) -> JsonObject:
    if current is None:
        raise Conflict("no intent is stored yet: set the fabric or the whole intent first")
    return current


def _entries_of(current: JsonObject | None, kind: ResourceKind) -> list[JsonObject]:
    return [dict(entry) for entry in _require(current).get(kind.value, [])]


def _named(data: Mapping[str, object], name: str) -> JsonObject:
    """The body of a PUT to ``.../{name}``; a name in the body must agree with the path."""
    body = dict(data)
    if body.setdefault("name", name) != name:
        raise IntentInvalid([FieldProblem("name", f"must match the name in the path ({name!r})")])
    return body


def _after(content: JsonObject, draft: _Draft) -> JsonObject | None:
    """The audited resource as stored (defaults filled in), or None once deleted."""
    if draft.resource_type == "intent":
        return content
    if draft.resource_type == "fabric":
        return dict(content["fabric"])
    kind = next(k for k in ResourceKind if k.audit_type == draft.resource_type)
    entries = list(content.get(kind.value, []))
    index = _find(entries, draft.resource_id)
    return None if index is None else dict(entries[index])


def head_intent(session: Session) -> Intent | None:
    """The current intent as stored; None before the first is stored."""
    return version_intent(session, intents.head_number(session=session))


def version_intent(session: Session, number: int) -> Intent | None:
    """Intent version ``number`` as stored (validated when written: only its shape is read);
    None for version 0 or one that does not exist."""
    row = intents.get_version(session=session, number=number) if number else None
    return None if row is None else Intent.model_validate(row.intent)
