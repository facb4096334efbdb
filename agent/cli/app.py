"""The typer application every command module registers on (``@app.command()``)."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="agent",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="opsloop: brings up, tunes and benchmarks inference deployments, and asks a human when blocked.",
)
