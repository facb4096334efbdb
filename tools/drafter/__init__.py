"""train_drafter and drafter_status: the SpecForge pipeline planned (plan.py), run detached (runner.py) and
followed (progress.py)."""
