"""One page of a query's rows with the count of all of them: how every ``list_*`` pages."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

T = TypeVar("T")


def page_of(
    *, session: Session, query: Select[tuple[T]], order: tuple[Any, ...], limit: int, offset: int
) -> tuple[list[T], int]:
    """Rows ``offset`` to ``offset + limit`` of ``query`` in ``order``, and how many rows the
    whole query has (counted over the query itself, so its filters count too)."""
    total = int(session.scalar(select(func.count()).select_from(query.subquery())) or 0)
    page = query.order_by(*order).limit(limit).offset(offset)
    return list(session.scalars(page)), total
