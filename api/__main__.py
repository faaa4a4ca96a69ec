"""``python -m api``: serve the REST API on the configured host and port (127.0.0.1:8000)."""

from __future__ import annotations

import uvicorn

from api.main import create_app
from controller.settings import Settings


def main() -> None:
    settings = Settings()
    uvicorn.run(create_app(settings), host=settings.api.host, port=settings.api.port)


if __name__ == "__main__":
    main()
