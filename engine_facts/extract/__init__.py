"""Engine facts read from the engines' published releases (maintenance side: ``scripts/engine-facts``)."""
