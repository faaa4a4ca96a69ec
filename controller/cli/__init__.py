"""The ``sluice`` command line (entry point ``controller.cli:main``); see ``app.py``."""

from controller.cli.adopting import register as register_adopting_commands
from controller.cli.app import CliDeps, app, check_app, main
from controller.cli.checks import roce
from controller.cli.hosts import hosts_app
from controller.cli.inventory import import_switches
from controller.cli.rollout import register as register_rollout_commands
from controller.cli.telemetry import register as register_telemetry_commands
from controller.cli.tuning import tune_app
from controller.cli.twin import register as register_twin_command

# Registered here, not in app.py, because hosts.py builds on app.py's helpers; importing
# controller.cli.app runs this package first, so every entry point has the group.
app.add_typer(hosts_app)

app.command("import-switches")(import_switches)

# rollout, drift, reconcile: they build on app.py's helpers, so they register here.
register_rollout_commands(app)

# discover, release, adoptions: taking over a running fabric and giving it back.
register_adopting_commands(app)

# check roce: the running fabric checked through the API (check -f is offline, in app.py).
check_app.command("roce")(roce)

# health, top: telemetry read through the API.
register_telemetry_commands(app)

# tune: proposals from the tuner (docs/tuning.md).
app.add_typer(tune_app)
# twin: the packet-level twin, run locally (docs/netsim.md).
register_twin_command(app)

__all__ = ["CliDeps", "app", "main"]
