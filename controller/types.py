"""Types every layer shares."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

# A JSON object as Python reads one: the one name for intent documents, JSONB columns, API
# bodies and CLI answers.
JsonObject = dict[str, Any]
# Time is passed in: production passes utc_now (controller/services/common.py), tests a step clock.
Clock = Callable[[], datetime]
