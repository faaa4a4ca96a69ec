"""One router per resource; ``api.main`` mounts them under ``/api/v1`` (health at the root)."""
