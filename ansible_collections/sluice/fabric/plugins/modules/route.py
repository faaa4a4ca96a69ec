#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: per-route minimum RTO (``sluice_ecn.route_rto_min``), idempotent.

Each listed prefix must already be a route in the main table; the module changes only its
``rto_min`` metric, carrying every other attribute of the route over (gateway, device,
protocol, scope, source, metric and the integer route metrics such as mtu). A route with a
metric it cannot carry over is refused rather than silently altered.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: route
short_description: Set the rto_min metric of existing routes, with check mode and diff
description:
  - Each prefix of C(sluice_ecn.route_rto_min) must already be a route in the main table; only
    its C(rto_min) metric changes, every other attribute of the route is carried over.
  - A route with a metric that cannot be carried over is refused rather than altered.
author: sluice developers (!UNKNOWN)
version_added: 0.1.0
requirements:
  - iproute2 (C(ip)) on the managed host
attributes:
  check_mode:
    support: full
    description: Reports what would change; changes nothing.
  diff_mode:
    support: full
    description: Shows the change before and after.
options:
  ecn:
    description: The C(sluice_ecn) variable; its C(route_rto_min) list is applied.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: A 5 ms minimum RTO towards the data-center prefix
  sluice.fabric.route:
    ecn:
      tcp_ecn: 1
      route_rto_min:
        - {prefix: 10.0.0.0/16, rto_min_ms: 5}
"""

RETURN = r"""
commands:
  description: The C(ip route replace) commands applied (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import (
    SchemaError,
    route_rto_min,
)

# Route metrics ip(8) takes back as plain integers, so a changed route keeps them.
INTEGER_METRICS = (
    "mtu", "advmss", "window", "cwnd", "initcwnd", "initrwnd", "reordering", "hoplimit",
    "ssthresh", "quickack", "fastopen_no_cookie",
)  # fmt: skip
ATTRIBUTES = (("gateway", "via"), ("dev", "dev"), ("protocol", "proto"), ("scope", "scope"),
              ("prefsrc", "src"), ("metric", "metric"))  # fmt: skip


def route_command(route: dict, rto_min_ms: int) -> list[str]:
    argv = ["ip", "route", "change", route["dst"]]
    for key, word in ATTRIBUTES:
        if key in route:
            argv += [word, str(route[key])]
    metrics = {k: v for item in route.get("metrics", []) for k, v in item.items()}
    for name, value in metrics.items():
        if name == "rto_min":
            continue
        if name not in INTEGER_METRICS or not isinstance(value, int):
            raise SchemaError(
                f"route {route['dst']}: metric {name}={value!r} cannot be carried over"
            )
        argv += [name, str(value)]
    return [*argv, "rto_min", f"{rto_min_ms}ms"]


def current_route(module: AnsibleModule, prefix: str) -> dict:
    family = "-6" if ":" in prefix else "-4"
    rc, out, err = module.run_command(["ip", family, "-j", "route", "show", "exact", prefix])
    routes = json.loads(out or "[]") if rc == 0 else []
    if len(routes) != 1:
        detail = f"no single route {prefix} in the main table {err}".strip()
        module.fail_json(msg=f"sluice_ecn.route_rto_min: {detail}")
    route = routes[0]
    if route.get("type", "unicast") != "unicast":
        module.fail_json(msg=f"sluice_ecn.route_rto_min: {prefix} is a {route['type']} route")
    # ip prints "default" for 0.0.0.0/0 and host routes without their /32: use the prefix.
    route["dst"] = prefix
    return route


def rto_of(route: dict) -> int | None:
    return next((m["rto_min"] for m in route.get("metrics", []) if "rto_min" in m), None)


def main() -> None:
    module = AnsibleModule(
        argument_spec={"ecn": {"type": "dict", "required": True}}, supports_check_mode=True
    )
    try:
        wanted = route_rto_min(module.params["ecn"])
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    routes = {prefix: current_route(module, prefix) for prefix in wanted}
    try:
        commands = [
            route_command(routes[p], ms) for p, ms in wanted.items() if rto_of(routes[p]) != ms
        ]
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    if commands and not module.check_mode:
        for argv in commands:
            rc, _out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg=f"{' '.join(argv)}: {err.strip()}")
    diff = {
        "before": "".join(f"{p} rto_min {rto_of(routes[p]) or '-'}ms\n" for p in sorted(wanted)),
        "after": "".join(f"{p} rto_min {wanted[p]}ms\n" for p in sorted(wanted)),
    }
    module.exit_json(changed=bool(commands), commands=[" ".join(c) for c in commands], diff=diff)


if __name__ == "__main__":
    main()
