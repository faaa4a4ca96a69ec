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

import json
from collections.abc import Callable
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


QOS = "openconfig-qos:qos"


def _pieces(document: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``document`` as the documents ``qos_problem`` checks the same way one by one: the
    ``/qos`` containers without their list entries, then each list entry on its own. The
    bindings check each node where it is placed and of its own type, never one entry
    against another (no leafref targets, ``must`` or ``when``), so each piece is accepted
    exactly when the whole is. None when ``document`` has another shape."""
    qos = document.get(QOS)
    if set(document) != {QOS} or not isinstance(qos, dict):
        return None
    skeleton: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    for kind, body in qos.items():
        lists = isinstance(body, dict) and all(isinstance(v, list) for v in body.values())
        if not lists:
            skeleton[kind] = body
            continue
        skeleton[kind] = {}
        for name, items in body.items():
            entries += [{QOS: {kind: {name: [item]}}} for item in items]
    return [{QOS: skeleton}, *entries]


def _where(piece: dict[str, Any]) -> str:
    """A piece's list entry as a gNMI path (``/qos/queues/queue[name=SLUICE_Q3]``), the way
    a switch's refusal names what it refused; ``/qos`` for the skeleton."""
    ((kind, body),) = piece[QOS].items() if len(piece[QOS]) == 1 else (("", {}),)
    if not body:
        return "/qos"
    ((name, (item,)),) = body.items()
    keys = ",".join(f"{k}={v}" for k, v in item.items() if not isinstance(v, dict | list))
    return f"/qos/{kind}/{name}[{keys}]"


def entrywise_qos_check() -> Callable[[dict[str, Any]], str | None]:
    """``qos_problem`` for a switch that takes Set after Set: the document is checked piece
    by piece (``_pieces``) and a piece the models accepted once is not checked again, so a
    Set costs the entries it changed. Loading one document into the bindings takes seconds;
    a switch's tree is re-checked whole after every Set (vsonic/openconfig.py)."""
    accepted: set[str] = set()

    def check(document: dict[str, Any]) -> str | None:
        pieces = _pieces(document)
        if pieces is None:
            return qos_problem(document)
        for piece in pieces:
            text = json.dumps(piece, sort_keys=True)
            if text in accepted:
                continue
            problem = qos_problem(piece)
            if problem is not None:
                return f"{_where(piece)}: {problem}"
            accepted.add(text)
        return None

    return check
