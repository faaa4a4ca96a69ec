"""PFC_WD|<port>: SONiC's PFC watchdog on each port with a lossless priority
(sonic-buildimage src/sonic-yang-models/yang-models/sonic-pfcwd.yang: ``detection_time``
100..5000 ms, ``restoration_time`` 100..60000 ms, ``action`` drop, forward or alert).

The watchdog watches every PFC priority of the port (``pfc_enable``, or ``pfcwd_sw_enable``
where set): a queue paused for ``detection_time`` is stormed and gets ``action`` until no
pause has come for ``restoration_time`` (sonic-swss orchagent/pfcwdorch.cpp). The values
are the intent's ``fabric.lossless.watchdog``, by default those of sonic-utilities'
``pfcwd start_default`` (pfcwd/main.py: 200 ms, 200 ms, drop). The ``GLOBAL`` key
(``POLL_INTERVAL``) stays the operator's.

A shared table: an operator's watchdog on a port is theirs unless the intent takes over every
lossless priority of that port (one watchdog per port; ``controller/sonic/coexist.py``).
"""

from __future__ import annotations

from controller.intent.models import PfcAction, PfcWatchdog
from controller.sonic.context import SwitchContext
from controller.sonic.model import Fields
from controller.sonic.schema import FieldSpec, TableSchema
from controller.sonic.tables._common import PORT_KEY, Entries, check_port_name

TABLE = "PFC_WD"

SCHEMA = TableSchema(
    table=TABLE,
    key_pattern=PORT_KEY,
    fields=(
        FieldSpec("action", "enum", choices=tuple(a.value for a in PfcAction), required=True),
        FieldSpec("detection_time", "uint", 100, 5000, required=True),
        FieldSpec("restoration_time", "uint", 100, 60_000, required=True),
    ),
    shared=True,
    # The watchdog starts on the priorities PFC is enabled on: those first.
    after=("PORT_QOS_MAP",),
)


def watchdog_fields(watchdog: PfcWatchdog) -> Fields:
    fields = {
        "action": watchdog.action.value,
        "detection_time": str(watchdog.detection_time_ms),
        "restoration_time": str(watchdog.restoration_time_ms),
    }
    SCHEMA.check_fields("<port>", fields)
    return fields


def build(ctx: SwitchContext) -> Entries:
    lossless = ctx.fleet.lossless
    if lossless is None:
        return {}
    out: Entries = {}
    for port in ctx.ports:
        check_port_name(SCHEMA, port.name)
        out[(TABLE, port.name)] = dict(lossless.watchdog)
    return out
