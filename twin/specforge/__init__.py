"""SpecForge stand-ins: drafter training and export on the simulated host."""
