"""openconfig-qos payloads checked against the published OpenConfig models.

A support module for the YANG tests (not product code). No package that a fresh machine can
install ships the OpenConfig YANG text (openconfig/public is on no registry served here); the
PyPI package ``oc-config-validate`` (google/gnxi, pinned in pyproject.toml's dev group) ships
the whole openconfig-qos tree (openconfig-qos@2026-01-16 and its imports, listed in
``oc_config_validate.models.__model_versions__``) compiled by pyang's pyangbind plugin into
Python bindings. Loading an RFC 7951 document into those bindings checks it against the
models: every node must exist where it is placed (an unknown or misplaced leaf is refused),
every value must fit its YANG type (ranges, patterns, enumerations, identityrefs, booleans,
list keys). The bindings do not check leafref targets, ``must`` or ``when``: the references
are the compiler's own check (``controller.openconfig.qos.check_references``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pyangbind.lib.serialise import pybindJSONDecoder


@cache
def _qos_bindings() -> Any:
    # ~10 MB of generated code: imported once per test run, and only by the tests using it.
    from oc_config_validate.models import qos

    return qos


def model_versions() -> dict[str, str]:
    """module -> revision of the bindings' models (what the validation is against)."""
    from oc_config_validate.models import __model_versions__

    out: dict[str, str] = {}
    for line in __model_versions__.splitlines():
        name, _, rest = line.partition("@")
        if rest:
            out[name.strip()] = rest.split()[0]
    return out


def qos_problem(document: dict[str, Any]) -> str | None:
    """Why the openconfig-qos models refuse ``document`` (RFC 7951 JSON with the
    ``openconfig-qos:qos`` top container), or None when they accept it."""
    root = _qos_bindings().openconfig_qos()
    try:
        pybindJSONDecoder.load_ietf_json(document, None, None, obj=root)
    except (AttributeError, KeyError, ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    return None
