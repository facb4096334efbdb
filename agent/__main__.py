"""``python -m agent`` runs the command line."""

from agent.cli import main

main()
