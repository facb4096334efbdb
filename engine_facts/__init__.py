"""What the real engines' published releases accept and print, read from their source (``release_facts.json``,
written by ``scripts/engine-facts``), and the readers both the agent's tools and the twin use: the flags a
release accepts (:mod:`engine_facts.accepted_flags`), its start-up wording (:mod:`engine_facts.milestones`).
Imports nothing from agent/, tools/ or twin/."""
