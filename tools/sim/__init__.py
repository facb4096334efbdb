"""The simulated host (digital twin): scenarios, SimHost, and the stand-in processes it runs.

See ``docs/scenarios.md`` for the scenario format and what each stand-in imitates.
"""
