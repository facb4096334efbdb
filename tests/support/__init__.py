"""Test support: one package, imported as ``support.<module>`` (tests/ is on the path). See README.md here
for what each module is for and which stand-in to use for what."""
