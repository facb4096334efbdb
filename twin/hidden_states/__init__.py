"""The stand-in for SpecForge's ``scripts/prepare_hidden_states.py`` (offline target features)."""
