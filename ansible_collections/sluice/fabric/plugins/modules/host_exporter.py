#!/usr/bin/python
# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: keep sluice-host-exporter running, supervised, with the wanted config.

The daemon (``roles/host_exporter/files/sluice_host_exporter.py``, copied by the role) runs
under its own supervisor (``supervise``: restarts the exporter when it exits), started in a
new session so it outlives the SSH connection. Its files are named by the listen address and
port, the one thing no two exporters can share: ``<state_dir>/host-exporter-<addr>-<port>.*``
(``json`` config, ``pid`` the supervisor, ``stamp`` what it was started with, ``log``).
Unchanged config and script: nothing happens. Otherwise it is (re)started and must answer on
``/metrics`` before the task succeeds.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: host_exporter
short_description: Run sluice-host-exporter as a supervised process with the wanted config
description:
  - Renders the exporter's config from C(sluice_host_exporter), C(sluice_dscp) and
    C(sluice_qjump), starts its supervisor when it is not running or was started with another
    config or script, and waits for C(/metrics) to answer. Switches conntrack byte
    accounting and timestamps on. Schema in sluice's docs/hosts.md.
author: sluice developers (!UNKNOWN)
version_added: 0.2.0
attributes:
  check_mode:
    support: full
    description: Reports whether it would (re)start; changes nothing.
  diff_mode:
    support: none
    description: No diff; the config is returned.
options:
  exporter:
    description: The C(sluice_host_exporter) variable.
    type: dict
    required: true
  dscp_classes:
    description: The C(sluice_dscp) variable (which ct mark names which class).
    type: list
    elements: dict
    default: []
  qjump:
    description: The C(sluice_qjump) variable (levels and P).
    type: raw
  host:
    description: The host's inventory name, the C(host) label of every metric.
    type: str
    required: true
  script:
    description: Path of the daemon on the host.
    type: path
    required: true
  python:
    description: The interpreter that runs it.
    type: path
    default: /usr/bin/python3
  state:
    description: V(started) or V(stopped).
    type: str
    choices: [started, stopped]
    default: started
"""

EXAMPLES = r"""
- name: Host exporter
  sluice.fabric.host_exporter:
    exporter: {listen_address: 10.0.0.1}
    dscp_classes: "{{ sluice_dscp }}"
    host: "{{ inventory_hostname }}"
    script: /var/lib/sluice/sluice_host_exporter.py
"""

RETURN = r"""
config:
  description: The config the exporter runs with.
  returned: always
  type: dict
"""

import hashlib
import json
import os
import signal
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.sluice.fabric.plugins.module_utils.hostexporter import exporter_config
from ansible_collections.sluice.fabric.plugins.module_utils.hostqos import SchemaError

# Conntrack's byte counters (DESTROY events carry them only with accounting on) and its start
# timestamps (a connection's completion time is measured from its entry's start; the extension
# is added only to entries made while it is on).
CONNTRACK_SYSCTLS = {
    "/proc/sys/net/netfilter/nf_conntrack_acct": "conntrack accounting",
    "/proc/sys/net/netfilter/nf_conntrack_timestamp": "conntrack timestamps",
}
READY_TIMEOUT_S = 10.0


def file_names(config: dict) -> dict[str, str]:
    stem = os.path.join(
        config["state_dir"], f"host-exporter-{config['listen_address']}-{config['port']}"
    )
    return {kind: f"{stem}.{kind}" for kind in ("json", "pid", "stamp", "log")}


def running_pid(paths: dict[str, str]) -> int | None:
    """The supervisor's pid if it runs this config (its command line names the file)."""
    try:
        with open(paths["pid"]) as handle:
            pid = int(handle.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if b"supervise" in argv and paths["json"].encode() in argv else None


def stop(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        with open(f"/proc/{pid}/status") as handle:
            if "\nState:\tZ" in handle.read():
                return
        time.sleep(0.05)


def answering(config: dict) -> bool:
    host = config["listen_address"]
    host = f"[{host}]" if ":" in host else host
    try:
        with open_url(f"http://{host}:{config['port']}/metrics", timeout=1) as page:
            return page.status == 200
    except Exception:  # refused, reset, an HTTP error: not answering yet
        return False


def start(module: AnsibleModule, config: dict, paths: dict[str, str], text: str) -> None:
    with open(paths["json"], "w") as handle:
        handle.write(text)
    argv = [module.params["python"], module.params["script"], "supervise", paths["json"]]
    argv += ["--pidfile", paths["pid"], "--detach-log", paths["log"]]
    rc, _out, err = module.run_command(argv)  # returns once the supervisor has detached
    if rc != 0:
        module.fail_json(msg=f"sluice-host-exporter did not start: {err.strip()}")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not answering(config):
        if time.monotonic() > deadline:
            with open(paths["log"], errors="replace") as handle:
                tail = handle.read()[-2000:]
            module.fail_json(msg=f"sluice-host-exporter did not answer on /metrics: {tail}")
        time.sleep(0.1)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "exporter": {"type": "dict", "required": True},
            "dscp_classes": {"type": "list", "elements": "dict", "default": []},
            "qjump": {"type": "raw"},
            "host": {"type": "str", "required": True},
            "script": {"type": "path", "required": True},
            "python": {"type": "path", "default": "/usr/bin/python3"},
            "state": {"type": "str", "choices": ["started", "stopped"], "default": "started"},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        config = exporter_config(
            params["exporter"], params["dscp_classes"], params["qjump"], params["host"]
        )
    except SchemaError as exc:
        module.fail_json(msg=str(exc))
    paths = file_names(config)
    pid = running_pid(paths)
    if params["state"] == "stopped":
        if pid is not None and not module.check_mode:
            stop(pid)
        module.exit_json(changed=pid is not None, config=config)
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    try:
        with open(params["script"], "rb") as handle:
            script = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"cannot read the exporter script: {exc}")
    stamp = hashlib.sha256(script + text.encode()).hexdigest()
    try:
        with open(paths["stamp"]) as handle:
            current = handle.read().strip()
    except OSError:
        current = ""
    changed = pid is None or current != stamp
    if changed and not module.check_mode:
        os.makedirs(config["state_dir"], mode=0o755, exist_ok=True)
        for sysctl, what in CONNTRACK_SYSCTLS.items():
            try:
                with open(sysctl, "w") as handle:
                    handle.write("1\n")
            except OSError as exc:
                module.fail_json(msg=f"cannot turn on {what} ({sysctl}): {exc}")
        stop(pid)
        start(module, config, paths, text)
        with open(paths["stamp"], "w") as handle:
            handle.write(stamp + "\n")
    module.exit_json(changed=changed, config=config)


if __name__ == "__main__":
    main()
