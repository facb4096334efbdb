"""Where tools act: the Host contract (base.py), the local machine, and the simulated host (sim/)."""
