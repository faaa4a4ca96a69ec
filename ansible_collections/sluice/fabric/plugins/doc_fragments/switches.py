# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switches a module has sluice's worker read: the intent's by name, and endpoints."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  switches:
    description: Switches of the current intent, by name.
    type: list
    elements: str
    default: []
  endpoints:
    description: Switches the intent does not have yet.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The name to give the switch.
        type: str
        required: true
      gnmi:
        description: Its gNMI endpoint (C(address), C(port), optionally C(target)).
        type: dict
        required: true
      credential_ref:
        description: Where its gNMI credential lives (C(env:NAME), C(file:/path)); never the secret.
        type: str
        required: true
"""
