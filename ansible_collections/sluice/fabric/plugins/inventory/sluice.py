# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory plugin: sluice's switches and hosts, read from the current intent."""

from __future__ import annotations

DOCUMENTATION = r"""
name: sluice
short_description: sluice's switches and hosts as Ansible inventory
version_added: 0.1.0
author: sluice developers (!UNKNOWN)
description:
  - Reads the current intent from the sluice API and adds every switch and host in it.
  - "Groups: C(sluice_switches) and C(sluice_hosts); C(sluice_role_<role>) per switch role
    (C(sluice_role_leaf), C(sluice_role_spine)); C(sluice_class_<name>) per service class,
    holding every switch (each queues every class) and, for a class with C(hosts_match),
    every host (each marks it)."
  - "Host variables from the intent: C(ansible_host) (a host's address, a switch's gNMI
    address), for hosts C(ansible_port), C(ansible_user) and C(ansible_python_interpreter)
    from its SSH settings, C(sluice_kind) (C(switch) or C(host)), C(sluice_classes), and the
    whole intent entry as C(sluice_switch) or C(sluice_host); C(sluice_intent_version) on all."
  - The configuration file must end in C(sluice.yml) or C(sluice.yaml).
extends_documentation_fragment:
  - constructed
options:
  plugin:
    description: The name of this plugin.
    required: true
    type: str
    choices: [sluice.fabric.sluice]
  url:
    description: Base URL of the sluice API, without C(/api/v1).
    type: str
    default: http://127.0.0.1:8000
    env:
      - name: SLUICE_API_URL
  token:
    description: A sluice API token with the C(viewer) role.
    type: str
    required: true
    env:
      - name: SLUICE_API_TOKEN
  validate_certs:
    description: Verify the API's TLS certificate.
    type: bool
    default: true
  ca_path:
    description: A PEM file of CA certificates to verify the API's certificate with.
    type: path
  timeout:
    description: Seconds to wait for the API.
    type: float
    default: 30
"""

EXAMPLES = r"""
# fabric.sluice.yml; list it with: ansible-inventory -i fabric.sluice.yml --graph
plugin: sluice.fabric.sluice
url: https://sluice.example.net
# token from SLUICE_API_TOKEN
keyed_groups:
  - key: sluice_switch.ports | length
    prefix: ports
"""

import re

from ansible.errors import AnsibleError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.sluice.fabric.plugins.module_utils.api import ApiError, SluiceApi

UNSAFE_GROUP_CHARS = re.compile(r"[^A-Za-z0-9_]")


def group_name(*parts: str) -> str:
    """A valid Ansible group name (letters, digits, underscores)."""
    return UNSAFE_GROUP_CHARS.sub("_", "_".join(parts))


def switch_vars(switch: dict, classes: list[str]) -> dict:
    return {
        "ansible_host": switch["gnmi"]["address"],
        "sluice_kind": "switch",
        "sluice_switch": switch,
        "sluice_classes": classes,
    }


def host_vars(host: dict, classes: list[str]) -> dict:
    ssh = host.get("ssh") or {}
    values = {
        "ansible_host": host["address"],
        "sluice_kind": "host",
        "sluice_host": host,
        "sluice_classes": classes,
    }
    if "port" in ssh:
        values["ansible_port"] = ssh["port"]
    if "user" in ssh:
        values["ansible_user"] = ssh["user"]
    if host.get("python"):
        values["ansible_python_interpreter"] = host["python"]
    return values


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "sluice.fabric.sluice"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith(("sluice.yml", "sluice.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            api = SluiceApi(
                self.get_option("url"),
                self.get_option("token"),
                validate_certs=self.get_option("validate_certs"),
                ca_path=self.get_option("ca_path"),
                timeout=self.get_option("timeout"),
            )
            version, intent = api.current_intent()
        except ApiError as exc:
            raise AnsibleError(f"sluice inventory: {exc}") from None
        self._add(version, intent or {})

    def _add(self, version: int, intent: dict) -> None:
        strict = self.get_option("strict")
        self.inventory.set_variable("all", "sluice_intent_version", version)
        classes = intent.get("service_classes", [])
        every_class = [c["name"] for c in classes]
        host_classes = [c["name"] for c in classes if c.get("hosts_match")]
        for group in ("sluice_switches", "sluice_hosts"):
            self.inventory.add_group(group)
        for switch in intent.get("switches", []):
            name = switch["name"]
            self.inventory.add_host(name, group="sluice_switches")
            role_group = self.inventory.add_group(group_name("sluice_role", switch["role"]))
            self.inventory.add_child(role_group, name)
            self._add_to_class_groups(name, every_class)
            self._set_host_vars(name, switch_vars(switch, every_class), strict)
        for host in intent.get("hosts", []):
            name = host["name"]
            self.inventory.add_host(name, group="sluice_hosts")
            self._add_to_class_groups(name, host_classes)
            self._set_host_vars(name, host_vars(host, host_classes), strict)

    def _add_to_class_groups(self, name: str, classes: list[str]) -> None:
        for cls in classes:
            group = self.inventory.add_group(group_name("sluice_class", cls))
            self.inventory.add_child(group, name)

    def _set_host_vars(self, name: str, values: dict, strict: bool) -> None:
        for key, value in values.items():
            self.inventory.set_variable(name, key, value)
        self._set_composite_vars(self.get_option("compose"), values, name, strict=strict)
        self._add_host_to_composed_groups(self.get_option("groups"), values, name, strict=strict)
        self._add_host_to_keyed_groups(self.get_option("keyed_groups"), values, name, strict=strict)
