"""Request and answer bodies, one module per resource (``api/schemas/<resource>.py``, named as
its route module ``api/routes/<resource>.py``); what they share is ``api/schemas/common.py``.

One convention (docs/architecture.md, "The API's conventions"): an answer body is a
``ViewOut`` built by ``Out.of(view)`` from what the resource's service returns, every field
read from the view's attribute of the same name (its own ``of`` says how where the shapes
differ); a request body is a ``Strict`` model (unknown fields refused). A schema imports only
``api.schemas.*``, its service's module (``controller.services.<resource>``: the types it
answers with) and what the API's room may import (``controller.intent`` for the intent's name
patterns, ``controller.types``).
"""
