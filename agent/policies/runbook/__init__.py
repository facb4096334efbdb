"""The deterministic, offline runbook policy (the default when no model is configured).

``policy.py`` decides; ``planning.py`` and ``goal.py`` turn the goal and the probe into a launch plan
(``cpu_plan.py`` on a host without a GPU); ``gate.py`` checks output before any speed counts (the lossless gate);
``calls.py`` builds the tool calls; ``launches.py`` and ``remedies.py`` react to a launch (ready, or
diagnosed and remedied one change at a time); ``choices.py`` compares measured configurations;
``drafter.py`` trains an EAGLE-3 drafter (SpecForge's offline route) when the available one loses;
``answers.py`` applies a human's answer; ``progress.py`` is its memory in the state; ``report.py`` the
closing report; ``settings.py`` its numbers (the ``[runbook]`` section of the configuration).
"""
