"""A fake collector: serves a fixed Prometheus exposition on /metrics (http.server on
127.0.0.1), in the real collector's metric names (docs/telemetry.md), for tests of what reads
them. The real one is ``python -m controller.collector``; a test switches to it by
scraping its port instead."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fake_collector(exposition: str) -> Iterator[str]:
    """Serve ``exposition`` until the block ends; yields ``host:port`` for a scrape target."""
    body = exposition.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
