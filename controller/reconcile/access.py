"""How rollouts and the reconcile loop reach switches: read tables, apply a plan.

``SwitchAccess`` is the seam: the rollout runner and the loop are written against it, and
``GnmiAccess`` is the production implementation over the southbound's ``SessionPool`` and
``apply_plan_to_switch`` (with the agent's volatile fields, so a threshold the on-switch
agent moved is not a mismatch). Credentials come from each switch's ``credential_ref``
through the resolver it is given, right before a session needs them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from controller.errors import NotFound, SouthboundError, SouthboundUnreachable
from controller.intent.models import Dialect, GnmiEndpoint, Switch
from controller.reconcile.apply import ApplyResult, ApplyStatus, agent_fields, apply_plan_to_switch
from controller.sonic.buffermgrd import BUFFER_FACT_TABLES
from controller.sonic.coexist import BASELINE_TABLES
from controller.sonic.discovery import PORT, Discovery, discover, openconfig_discovery
from controller.sonic.model import Plan, SwitchConfig
from controller.sonic.tables import SCHEMAS
from controller.southbound.credentials import SecretResolver
from controller.southbound.gnmi import (
    DEFAULT_USERNAME,
    SessionPool,
    SwitchSession,
    TableAnswers,
    TlsOptions,
    target_for_endpoint,
    target_for_switch,
)

# Every table sluice can own: reading all of them lets a plan find an entry sluice wrote
# under an older version even when the newer version no longer has that table at all.
OWNED_TABLES = tuple(sorted(SCHEMAS))
# What a rollout reads before it writes: the owned tables, the operator's QoS config that
# adoption keeps (controller/sonic/coexist.py), the ports the intent's are checked against,
# and where SONiC's buffer manager writes lossless groups (controller/sonic/buffermgrd.py).
ROLLOUT_TABLES = tuple(sorted({*OWNED_TABLES, *BASELINE_TABLES, *BUFFER_FACT_TABLES, PORT}))


class SwitchAccess(Protocol):
    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        """The entries of ``tables`` the switch holds now; raises ``SouthboundError`` or
        ``NotFound`` (an unresolvable credential)."""
        ...

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        """Write ``plan`` and verify it by read-back; never raises for a switch's failure."""
        ...


class SwitchDiscovery(Protocol):
    def discover(
        self, name: str, gnmi: GnmiEndpoint, credential_ref: str, *, username: str | None = None
    ) -> Discovery:
        """What the switch at ``gnmi`` runs (``controller/sonic/discovery.py``), logged in as
        ``username`` (None: the access's own); raises ``SouthboundError`` or ``NotFound`` (an
        unresolvable credential)."""
        ...


@runtime_checkable
class TableReader(Protocol):
    """A ``SwitchAccess`` that can also hand over tables as the switch answered them, so
    the reconcile loop compares them by digest before decoding anything."""

    def read_answers(self, switch: Switch, tables: Iterable[str]) -> TableAnswers:
        """``read``'s Get, its tables' JSON kept undecoded; raises as ``read`` does."""
        ...


def unapplied(switch: str, status: ApplyStatus, reason: str) -> ApplyResult:
    """The result of a switch that could not even be read (nothing was written)."""
    return ApplyResult(switch, status, 0, 0, 0, reason)


def read_failure(switch: str, error: SouthboundError | NotFound) -> ApplyResult:
    """A failed pre-apply read as an apply result: unreachable stays unreachable."""
    status: ApplyStatus = "unreachable" if isinstance(error, SouthboundUnreachable) else "failed"
    return unapplied(switch, status, f"reading the switch: {error.detail}")


@dataclass
class GnmiAccess:
    """``SwitchAccess`` over gNMI: sessions from ``pool``, passwords from ``resolve``.
    ``tls`` is required and None (plaintext) only when the settings say insecure
    (``session_tls``)."""

    pool: SessionPool
    resolve: SecretResolver
    username: str = DEFAULT_USERNAME
    batch_size: int = 100
    tls: TlsOptions | None = field(kw_only=True)

    def session(self, switch: Switch) -> SwitchSession:
        """The pool's session for ``switch`` (its prefix target, if the intent names one);
        raises ``NotFound`` when its credential cannot be resolved."""
        target = target_for_switch(switch, self.resolve, username=self.username, tls=self.tls)
        return self.pool.session(target)

    def read(self, switch: Switch, tables: Iterable[str]) -> SwitchConfig:
        return self.session(switch).get_tables(tables)

    def read_answers(self, switch: Switch, tables: Iterable[str]) -> TableAnswers:
        return self.session(switch).get_table_answers(tables)

    def discover(
        self, name: str, gnmi: GnmiEndpoint, credential_ref: str, *, username: str | None = None
    ) -> Discovery:
        target = target_for_endpoint(
            name,
            gnmi,
            credential_ref,
            self.resolve,
            username=username or self.username,
            tls=self.tls,
        )
        session = self.pool.session(target)
        if session.dialect() is Dialect.OPENCONFIG:  # its Capabilities say so: no SONiC DBs
            return openconfig_discovery(name)
        return discover(name, session.read_for_discovery())

    def apply(self, switch: Switch, plan: Plan) -> ApplyResult:
        try:
            session = self.session(switch)
        except NotFound as error:
            return unapplied(switch.name, "failed", error.detail)
        return apply_plan_to_switch(
            session,
            plan,
            batch_size=self.batch_size,
            pace=self.pool.policy.pace,
            volatile=agent_fields,
        )
