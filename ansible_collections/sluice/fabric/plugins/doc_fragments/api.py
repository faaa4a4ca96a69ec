# Copyright: sluice developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection options every module of this collection that talks to sluice's API takes."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  url:
    description:
      - Base URL of the sluice API, without C(/api/v1).
      - Taken from E(SLUICE_API_URL) when not given; V(http://127.0.0.1:8000) when neither is.
    type: str
  token:
    description:
      - A sluice API token (C(slc_...)); the role it needs is named in each module's notes.
      - Taken from E(SLUICE_API_TOKEN) when not given. Never logged.
    type: str
  validate_certs:
    description:
      - Verify the API's TLS certificate. Leave on outside a lab.
    type: bool
    default: true
  ca_path:
    description: A PEM file of CA certificates to verify the API's certificate with.
    type: path
  timeout:
    description: Seconds to wait for each HTTP request.
    type: float
    default: 30
notes:
  - "These modules talk to the sluice API over HTTP(S) from the node that runs them; run them
    on the control node (C(hosts: localhost), C(connection: local)) or delegate them there."
"""
