"""The web dashboard: static HTML, CSS and JavaScript shipped in the package (``api/dashboard``),
no build step and nothing fetched from elsewhere. The page itself needs no token (it holds no
data); every number on it comes from the token-guarded API (docs/health.md)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

DASHBOARD_DIR = Path(__file__).resolve().parent.parent / "dashboard"
# Scripts and styles from this server only: nothing inline, no third-party origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def install(app: FastAPI) -> None:
    @app.get("/dashboard", include_in_schema=False)
    def dashboard() -> FileResponse:
        return FileResponse(
            DASHBOARD_DIR / "index.html", media_type="text/html", headers=SECURITY_HEADERS
        )

    app.mount("/dashboard/static", StaticFiles(directory=DASHBOARD_DIR), name="dashboard")
