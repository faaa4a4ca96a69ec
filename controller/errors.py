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


class LosslessBufferInvalid(IntentInvalid):
    """A lossless priority's buffer cannot be made safe on a port (``controller/qos/lossless.py``,
    docs/lossless.md): one problem, at ``path``, naming the port, the priority and the numbers."""

    title = "lossless buffer invalid"

    def __init__(self, path: str, port: str, priority: int, reason: str) -> None:
        self.port = port
        self.priority = priority
        super().__init__([FieldProblem(path=path, reason=f"{type(self).__name__}: {reason}")])


class DeviationUnsupported(IntentInvalid):
    """An OpenConfig switch's platform does not support what the intent needs of the models
    (``controller/openconfig/deviations.py``): one problem at the switch's ``platform``,
    naming the featureprofiles deviation."""

    title = "platform deviation unsupported"

    def __init__(self, path: str, platform: str, deviation: str, reason: str) -> None:
        self.platform = platform
        self.deviation = deviation
        detail = f"{type(self).__name__}: {platform} ({deviation}): {reason}"
        super().__init__([FieldProblem(path=path, reason=detail)])


class HeadroomDoesNotFit(LosslessBufferInvalid):
    """The headroom a port's lossless priorities need leaves no shared pool within its buffer:
    a pause could not be absorbed, or the priorities would have nothing to queue in."""

    title = "headroom does not fit"

    def __init__(
        self, path: str, port: str, priority: int, headroom_bytes: int, buffer_bytes: int
    ) -> None:
        self.headroom_bytes = headroom_bytes
        self.buffer_bytes = buffer_bytes
        reason = (
            f"{port}: the lossless priorities' headroom, {headroom_bytes} B with priority "
            f"{priority}, leaves no shared pool in a {buffer_bytes} B port buffer; give the "
            "port more buffer, a shorter cable or fewer lossless priorities"
        )
        super().__init__(path, port, priority, reason)


class KmaxAboveXoff(LosslessBufferInvalid):
    """A lossless queue's ECN Kmax is not below the point where its priority group sends
    PFC XOFF: the port would pause its peer before DCQCN's marking slowed the senders."""

    title = "ECN Kmax above the XOFF point"

    def __init__(
        self, path: str, port: str, priority: int, kmax_bytes: int, xoff_point_bytes: int
    ) -> None:
        self.kmax_bytes = kmax_bytes
        self.xoff_point_bytes = xoff_point_bytes
        reason = (
            f"{port} priority {priority}: Kmax {kmax_bytes} B is not below the XOFF point "
            f"{xoff_point_bytes} B (the priority group's shared-buffer limit): PFC would pause "
            "before ECN marks every packet it should; lower kmax_bytes or give the port more buffer"
        )
        super().__init__(path, port, priority, reason)


class BuffermgrdHeadroomDoesNotFit(HeadroomDoesNotFit):
    """HeadroomDoesNotFit with the figures the switch runs: on a port whose lossless groups
    SONiC's traditional buffer manager writes, the headroom is its lookup-table profile
    (``profile``, in the switch's CONFIG_DB), not the intent's
    (``controller/sonic/buffermgrd.py``)."""

    title = "buffermgrd's headroom does not fit"

    def __init__(
        self,
        path: str,
        port: str,
        priority: int,
        headroom_bytes: int,
        buffer_bytes: int,
        *,
        profile: str,
        size_bytes: int,
    ) -> None:
        self.headroom_bytes = headroom_bytes
        self.buffer_bytes = buffer_bytes
        self.profile = profile
        reason = (
            f"{port}: buffermgrd's {profile} (the switch's lookup-table profile, size "
            f"{size_bytes} B per group) makes the lossless priorities' headroom {headroom_bytes} B "
            f"with priority {priority}, which leaves no shared pool in a {buffer_bytes} B port "
            "buffer; give the port more buffer, fewer lossless priorities, or change the switch's "
            "profile"
        )
        LosslessBufferInvalid.__init__(self, path, port, priority, reason)


class BuffermgrdKmaxAboveXoff(KmaxAboveXoff):
    """KmaxAboveXoff with the figures the switch runs: the XOFF point of buffermgrd's
    lookup-table profile (``profile``: its size and ``dynamic_th``), not of the intent's
    headroom (``controller/sonic/buffermgrd.py``)."""

    title = "ECN Kmax above buffermgrd's XOFF point"

    def __init__(
        self,
        path: str,
        port: str,
        priority: int,
        kmax_bytes: int,
        xoff_point_bytes: int,
        *,
        profile: str,
        figures: str,
    ) -> None:
        self.kmax_bytes = kmax_bytes
        self.xoff_point_bytes = xoff_point_bytes
        self.profile = profile
        reason = (
            f"{port} priority {priority}: Kmax {kmax_bytes} B is not below the XOFF point "
            f"{xoff_point_bytes} B that buffermgrd's {profile} gives the priority group (the "
            f"switch's lookup-table profile: {figures}): PFC would pause before ECN marks every "
            "packet it should; lower kmax_bytes, give the port more buffer, or change the "
            "switch's profile"
        )
        LosslessBufferInvalid.__init__(self, path, port, priority, reason)


class DocumentInvalid(SluiceError):
    """A document (JSON body, YAML file) sluice cannot read: not UTF-8, too large, nested
    too deep, an integer too long, a key given twice; ``detail`` says which and where."""

    title = "document invalid"


class BodyTooLarge(DocumentInvalid):
    """A request body past the size limit, refused before more of it is read."""

    title = "body too large"


class NotFound(SluiceError):
    title = "not found"


class Conflict(SluiceError):
    """The request conflicts with the current state (e.g. a concurrent intent update)."""

    title = "conflict"


class PortFlapsNotAllowed(Conflict):
    """A change would take switch ports admin down and up (SONiC's config updater does for
    every change to QUEUE, BUFFER_QUEUE, PORT_QOS_MAP ...: ``controller/sonic/gcu.py``) and
    nobody allowed it; nothing was written. The detail names each switch and port and why."""

    title = "port flaps not allowed"


class NamedConflict(Conflict):
    """A conflict with the switches that names each field or port it is about
    (``problems``, rendered as the problem's ``errors``)."""

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


class InventoryMismatch(NamedConflict):
    """The intent's ports differ from what the switch reports (a port it lacks, a speed it
    does not run): every threshold sluice computes follows the declared speed, so nothing
    is written. ``problems`` name each switch and port (``switches.leaf1.ports.Ethernet0``)."""

    title = "inventory mismatch"


class LosslessConflict(NamedConflict):
    """The intent would touch what makes the operator's traffic lossless (a lossless DSCP
    moved to a lossy class, lossy traffic put on a PFC priority, a lossless queue's scheduler,
    WRED or buffer changed: ``controller/sonic/coexist.py``); nothing is written.
    ``problems`` name each CONFIG_DB field (``QUEUE|Ethernet0|3.scheduler``)."""

    title = "lossless traffic would be changed"


class WatchdogNotStarted(NamedConflict):
    """The intent puts SONiC's PFC watchdog on a switch that has none yet (no ``PFC_WD``
    entry), and the switch's config updater refuses a first one
    (``controller/sonic/gcu.py`` ``watchdog_not_started``); nothing is written. ``problems``
    name each switch's ``PFC_WD`` table and what its operator must run first."""

    title = "pfc watchdog not started"


class PreconditionFailed(SluiceError):
    """An If-Match precondition no longer holds: somebody changed the intent first."""

    title = "precondition failed"


class PreconditionRequired(SluiceError):
    title = "precondition required"


class Unauthenticated(SluiceError):
    title = "unauthenticated"


class Forbidden(SluiceError):
    title = "forbidden"


class WorkerTimeout(SluiceError):
    """The API recorded a request and waited, but no worker finished it in time."""

    title = "worker did not answer"


class ApiUnreachable(SluiceError):
    """A client got no answer from the REST API (refused, timed out, name not resolved)."""

    title = "API unreachable"


class CompiledConfigInvalid(SluiceError):
    """The compiler produced a CONFIG_DB entry its table schema refuses: a bug in sluice,
    stopped before anything reaches a switch."""

    title = "compiled configuration invalid"


class SouthboundError(SluiceError):
    """A switch could not be configured or read over gNMI; ``switch`` names which one."""

    title = "southbound error"

    def __init__(self, switch: str, detail: str) -> None:
        super().__init__(f"{switch}: {detail}")
        self.switch = switch


class SouthboundUnreachable(SouthboundError):
    """No answer from the switch's gNMI server (refused, timed out) after every retry."""

    title = "switch unreachable"


class SouthboundSetUnconfirmed(SouthboundUnreachable):
    """A Set got no answer (deadline passed, connection lost) and the switch may still be
    applying it: a CONFIG_DB Set is a GCU run that goes on after the client gave up. Never
    resend it blindly; read back first, for up to ``outcome_wait_s`` seconds."""

    title = "switch did not confirm the write"

    def __init__(self, switch: str, detail: str, outcome_wait_s: float) -> None:
        super().__init__(switch, detail)
        self.outcome_wait_s = outcome_wait_s


class SouthboundSetOutcomeUnknown(SouthboundError):
    """A Set got no answer and, after reading back for several of its deadlines, the switch
    still does not show it: GCU may still be applying it, or it was lost. It is never sent
    again while it may still be applying; the switch's state is unknown until a fresh read
    (the next rollout or reconcile pass) plans from what it holds."""

    title = "switch state unknown after an unanswered write"


class SouthboundRejected(SouthboundError):
    """The switch answered and refused the request; ``message`` is the switch's own words
    (for a refused value it names the table, key and field)."""

    title = "switch rejected the request"

    def __init__(self, switch: str, code: str, message: str) -> None:
        super().__init__(switch, f"{code}: {message}")
        self.code = code
        self.message = message


class SouthboundProtocolError(SouthboundError):
    """The switch answered with something gNMI or CONFIG_DB does not allow (a malformed path
    or value); a bug on one side or the other, never retried."""

    title = "malformed switch response"


class PrometheusError(SluiceError):
    """Reading telemetry history from Prometheus failed (controller/prometheus/promql.py)."""

    title = "prometheus error"


class PrometheusUnreachable(PrometheusError):
    """No answer from Prometheus (refused, timed out, or it answered 503 while starting)."""

    title = "prometheus unreachable"


class PrometheusQueryInvalid(PrometheusError):
    """Prometheus refused the query (``bad_data``): a bug in the query sluice built."""

    title = "prometheus query invalid"


class PrometheusBadAnswer(PrometheusError):
    """Prometheus answered something its HTTP API does not allow (not JSON, wrong shape)."""

    title = "prometheus bad answer"
