"""What every resource's bodies share: the database's bounds, a whole number, the request and
answer bases, and a page of answers."""

from __future__ import annotations

from typing import Annotated, Any, Generic, Self, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from controller.services.common import Page
from controller.types import JsonObject

T = TypeVar("T")

# Bounds every id, version, offset and text carries in its schema, so nothing out of the
# database's range reaches SQL: ids and offsets are PostgreSQL ``bigint``, intent versions
# ``integer``; PostgreSQL text cannot hold a NUL byte.
DB_BIGINT_MAX = 2**63 - 1
DB_INTEGER_MAX = 2**31 - 1
NO_NUL = r"^[^\x00]*$"

# The largest page any list answers (``SLUICE_PAGE_SIZE_MAX`` may lower it, never raise it).
PAGE_SIZE_LIMIT = 500


def _integral_as_int(value: object) -> object:
    # JSON Schema's "integer" holds 455.0 (a number whose fraction is zero) as well as 455,
    # and so do JSON writers that keep every number a double: read it as the integer it is.
    # Anything else (2.5, true, "455") is left for strict validation to refuse.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a request body: 455 or 455.0, never 455.5, "455" or true (strict).
WholeNumber = Annotated[int, BeforeValidator(_integral_as_int), Field(strict=True)]

# A body or answer that is the intent or a part of it (a switch, a host, a service class,
# the fabric), kept a plain JSON object: the intent's own parser checks it and names every
# bad field (``controller/intent/loader.py``); ``api/openapi.py`` publishes its schema.
IntentJson = JsonObject


class Strict(BaseModel):
    """A request body: a field the API does not know is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ViewOut(BaseModel):
    """An answer body filled from a service's view object: every field read from the
    attribute of the same name (nested answer bodies likewise), so a field added to both
    needs no copying code. A body whose shape differs from its view's says how in its own
    ``of``."""

    @classmethod
    def of(cls, view: Any) -> Self:
        return cls.model_validate(view, from_attributes=True)


class PageOut(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


def page_out(page: Page[Any], items: list[T]) -> PageOut[T]:
    return PageOut[T](items=items, total=page.total, limit=page.limit, offset=page.offset)
