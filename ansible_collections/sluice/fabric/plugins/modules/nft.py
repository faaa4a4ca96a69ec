#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: an nftables table owned by sluice, replaced atomically, with check mode and diff.

The wanted table is rendered from ``sluice_dscp`` or ``sluice_pias`` (docs/hosts.md). To
compare it with the live one the way the kernel sees both, the rendered script is loaded into
a throwaway network namespace (``unshare --net``) and listed back with ``nft -j``: the live
table and that listing must be equal once rule handles are dropped. So check mode and the
diff never touch the host's own ruleset, and a hand edit inside sluice's table shows up as a
change. Applying is one nft transaction (create-if-missing, delete, define), so packets never
see a half-written table; the result is read back and compared again.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: nft
short_description: Replace a sluice-owned nftables table atomically (DSCP marking or PIAS tagging)
description:
  - Renders an C(inet) table from C(sluice_dscp) or C(sluice_pias) and compares it with the
    live table the way the kernel sees both (the rendered script is loaded into a throwaway
    network namespace and listed back), so check mode and diff never touch the host's ruleset.
  - Applies the table in one nft transaction and reads it back; with PIAS it also switches
    conntrack byte accounting on.
  - Used by the C(sluice.fabric.dscp) and C(sluice.fabric.pias) roles (schema in sluice's
    docs/hosts.md).
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
requirements:
  - nftables (C(nft)) and util-linux (C(unshare)) on the managed host
attributes:
  check_mode:
    support: full
    description: Reports what would change; changes nothing.
  diff_mode:
    support: full
    description: Shows the change before and after.
options:
  table:
    description: Table name in the inet family; must start with C(sluice).
    type: str
    required: true
  dscp_classes:
    description: The C(sluice_dscp) variable.
    type: list
    elements: dict
  pias:
    description: The C(sluice_pias) variable (a mapping, or a list of them).
    type: raw
  conntrack_marks:
    description: With O(dscp_classes), also put each class's index + 1 in the ct mark's low
      byte (the host exporter reads it from conntrack events).
    type: bool
    default: false
  host_exporter:
    description: The C(sluice_host_exporter) variable; renders the exporter's sets and
      counters (with O(dscp_classes) and O(qjump) as context).
    type: dict
  qjump:
    description: The C(sluice_qjump) variable, context for O(host_exporter).
    type: raw
  host:
    description: The host's inventory name, context for O(host_exporter).
    type: str
    default: ""
  state:
    description: V(present) writes the rendered table; V(absent) deletes the table.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: DSCP marking for TCP port 7000
  sluice.fabric.nft:
    table: sluice_dscp
    dscp_classes:
      - {name: control, dscp: 48, match: {protocol: tcp, dports: [7000]}}

- name: Remove sluice's PIAS table
  sluice.fabric.nft:
    table: sluice_pias
    state: absent
"""

RETURN = r"""
script:
  description: The nft script that defines the wanted table (empty when O(state=absent)).
  returned: always
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.hostexporter import (
    exporter_config,
    render_exporter_table,
)
from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import SchemaError
from ansible_collections.sluice.fabric.plugins.module_utils.nftrules import (
    check_table,
    render_dscp_table,
    render_pias_table,
)

SEPARATOR = "\n--sluice-listing--\n"
ACCT_SYSCTL = "/proc/sys/net/netfilter/nf_conntrack_acct"


# What traffic changes in a table, not its definition: counter values, dynamic set elements.
LIVE_FIELDS = {"counter": {"packets", "bytes"}, "set": {"elem"}}


def normalise(listing: str) -> list[dict]:
    """nft's JSON without what differs between two loads of the same rules."""
    items = []
    for item in json.loads(listing)["nftables"]:
        if "metainfo" in item:
            continue
        ((kind, body),) = item.items()
        dropped = {"handle"} | LIVE_FIELDS.get(kind, set())
        items.append({kind: {k: v for k, v in body.items() if k not in dropped}})
    return items


def live_table(module: AnsibleModule, table: str) -> tuple[list[dict] | None, str]:
    rc, out, _err = module.run_command(["nft", "-j", "list", "table", "inet", table])
    if rc != 0:
        return None, ""  # no such table
    _rc, text, _err = module.run_command(["nft", "list", "table", "inet", table])
    return normalise(out), text


def scratch_table(module: AnsibleModule, table: str, script: str) -> tuple[list[dict], str]:
    path = os.path.join(module.tmpdir, "sluice-table.nft")
    with open(path, "w") as handle:
        handle.write(script)
    shell = 'nft -f "$0" && nft -j list table inet "$1" && printf "$2" && nft list table inet "$1"'
    rc, out, err = module.run_command(
        ["unshare", "--net", "--", "sh", "-c", shell, path, table, SEPARATOR]
    )
    if rc != 0:
        module.fail_json(msg=f"nft refused the rendered table: {err.strip()}", script=script)
    listing, text = (
        out.split(SEPARATOR.strip() + "\n", 1) if SEPARATOR.strip() in out else (out, "")
    )
    return normalise(listing), text


def load(module: AnsibleModule, script: str) -> None:
    path = os.path.join(module.tmpdir, "sluice-apply.nft")
    with open(path, "w") as handle:
        handle.write(script)
    rc, _out, err = module.run_command(["nft", "-f", path])
    if rc != 0:
        module.fail_json(msg=f"nft failed: {err.strip()}")


def ensure_conntrack_accounting(module: AnsibleModule) -> bool:
    """PIAS rules read ``ct ... bytes``, which stay zero unless conntrack accounting is on in
    this network namespace; switched on here, after the variables passed validation."""
    try:
        with open(ACCT_SYSCTL) as handle:
            on = handle.read().strip() == "1"
        if not on and not module.check_mode:
            with open(ACCT_SYSCTL, "w") as handle:
                handle.write("1\n")
    except OSError as exc:
        module.fail_json(msg=f"cannot turn on conntrack accounting ({ACCT_SYSCTL}): {exc}")
    return not on


def render(params: dict, table: str) -> str:
    if params["host_exporter"] is not None:
        config = exporter_config(
            params["host_exporter"], params["dscp_classes"], params["qjump"], params["host"]
        )
        return render_exporter_table(config)
    if params["dscp_classes"] is not None:
        return render_dscp_table(
            table, params["dscp_classes"], conntrack_marks=params["conntrack_marks"]
        )
    return render_pias_table(table, params["pias"])


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "table": {"type": "str", "required": True},
            "dscp_classes": {"type": "list", "elements": "dict"},
            "pias": {"type": "raw"},
            "conntrack_marks": {"type": "bool", "default": False},
            "host_exporter": {"type": "dict"},
            "qjump": {"type": "raw"},
            "host": {"type": "str", "default": ""},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        },
        mutually_exclusive=[("dscp_classes", "pias"), ("host_exporter", "pias")],
        required_if=[("state", "present", ("dscp_classes", "pias", "host_exporter"), True)],
        supports_check_mode=True,
    )
    try:
        table = check_table(module.params["table"])
        script = render(module.params, table) if module.params["state"] == "present" else ""
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    current, current_text = live_table(module, table)
    wanted, wanted_text = scratch_table(module, table, script) if script else (None, "")
    changed = current != wanted
    accounting_changed = False
    counts_bytes = module.params["pias"] is not None or module.params["host_exporter"] is not None
    if counts_bytes and module.params["state"] == "present":
        accounting_changed = ensure_conntrack_accounting(module)
    # Creating the table first makes 'delete' valid whether or not it exists, all in one
    # transaction.
    replace = f"table inet {table}\ndelete table inet {table}\n{script}"
    if changed and not module.check_mode:
        load(module, replace)
        if live_table(module, table)[0] != wanted:
            module.fail_json(msg=f"table inet {table} differs from the rendered one after loading")
    diff = {
        "before": current_text,
        "after": wanted_text,
        "before_header": f"inet {table} (current)",
        "after_header": f"inet {table} (sluice)",
    }
    if accounting_changed:
        diff["before"] = "net.netfilter.nf_conntrack_acct = 0\n" + diff["before"]
        diff["after"] = "net.netfilter.nf_conntrack_acct = 1\n" + diff["after"]
    module.exit_json(changed=changed or accounting_changed, diff=diff, script=script)


if __name__ == "__main__":
    main()
