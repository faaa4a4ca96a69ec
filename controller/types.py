"""Types every layer shares."""

from __future__ import annotations

from typing import Any

# A JSON object as Python reads one: the one name for intent documents, JSONB columns, API
# bodies and CLI answers.
JsonObject = dict[str, Any]
