"""Desired/running state in the store: ``{"TABLE|key": fields}`` JSON <-> ``SwitchConfig``.

A CONFIG_DB table name never contains ``|`` while keys often do (``Ethernet0|3``), so the
first ``|`` separates table from key, exactly as in the Redis key.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from controller.sonic.model import SwitchConfig
from controller.store.repositories import states


def encode_config(config: SwitchConfig) -> dict[str, Any]:
    return {f"{table}|{key}": dict(fields) for (table, key), fields in config.items()}


def decode_config(stored: Mapping[str, Any]) -> SwitchConfig:
    config: SwitchConfig = {}
    for joined, fields in stored.items():
        table, _, key = joined.partition("|")
        config[(table, key)] = {str(name): str(value) for name, value in fields.items()}
    return config


def decode_fleet(stored: Mapping[str, Mapping[str, Any]]) -> dict[str, SwitchConfig]:
    return {switch: decode_config(config) for switch, config in stored.items()}


def save_running_state(
    session: Session, *, switch: str, config: SwitchConfig, at: datetime, source: str
) -> None:
    """Record that ``switch`` ran ``config`` at ``at`` (``source``: what read it back), in
    the caller's transaction."""
    states.record_running_state(
        session=session,
        switch_name=switch,
        config=encode_config(config),
        recorded_at=at,
        source=source,
    )
