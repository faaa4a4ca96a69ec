"""How this controller runs Ansible: the control node's side, never part of the intent.

The intent says which hosts exist and how to log in to each (user, port, key reference,
interpreter); this says where ansible-playbook and the playbook are, how to start it (a
command prefix, e.g. ``ip netns exec <ns>`` when the hosts are only reachable from a network
namespace), the SSH options every host shares (known_hosts), and where runs keep their
inventory while they run. From ``SLUICE_HOSTS_*`` environment variables, injected.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from controller.hosts.runner import AnsibleSetup

REPO_PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"


class HostsConfig(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUICE_HOSTS_", extra="ignore", frozen=True)

    ansible_playbook: Path = Field(
        default=Path(sys.executable).parent / "ansible-playbook",
        description="the ansible-playbook installed with the controller",
    )
    playbook_dir: Path = Field(
        default=REPO_PLAYBOOKS, description="holds site.yml and ansible.cfg (docs/hosts.md)"
    )
    command_prefix: tuple[str, ...] = Field(
        default=(),
        description='argv put before ansible-playbook, JSON: ["ip","netns","exec","ctl"]',
    )
    ssh_common_args: str = Field(
        default="", description="ansible_ssh_common_args for every host (e.g. known_hosts options)"
    )
    control_path_dir: Path | None = Field(
        default=None, description="ansible_control_path_dir: where SSH masters keep sockets"
    )
    inventory_vars: dict[str, Any] = Field(
        default_factory=dict,
        description="more inventory all.vars for every host, JSON (host variables win)",
    )
    workdir: Path = Field(
        default=Path(tempfile.gettempdir()) / "sluice-host-runs",
        description="a folder per run (inventory, events) while it runs; removed after",
    )
    batch_timeout_s: float = Field(default=900.0, gt=0, description="per ansible-playbook batch")

    def setup(self) -> AnsibleSetup:
        return AnsibleSetup(
            ansible_playbook=self.ansible_playbook,
            playbook=self.playbook_dir / "site.yml",
            config=self.playbook_dir / "ansible.cfg",
            prefix=self.command_prefix,
            batch_timeout_s=self.batch_timeout_s,
        )

    def group_vars(self) -> dict[str, Any]:
        """Inventory ``all.vars``: connection settings shared by every host."""
        values: dict[str, Any] = dict(self.inventory_vars)
        if self.ssh_common_args:
            values["ansible_ssh_common_args"] = self.ssh_common_args
        if self.control_path_dir is not None:
            values["ansible_control_path_dir"] = str(self.control_path_dir)
        return values
