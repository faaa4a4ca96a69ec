"""The ``sluice`` command line (entry point ``controller.cli:main``); see ``app.py``."""

from controller.cli.app import CliDeps, app, main

__all__ = ["CliDeps", "app", "main"]
