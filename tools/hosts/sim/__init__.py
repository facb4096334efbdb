"""The simulated host: a LocalHost whose command lines are translated to the digital twin's stand-ins (``twin``)."""
