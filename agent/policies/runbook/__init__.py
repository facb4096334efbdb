"""The deterministic, offline runbook policy (the default when no model is configured).

``policy.py`` decides; ``planning.py`` and ``goal.py`` turn the goal and the probe into a launch plan
(``cpu_plan.py`` on a host without a GPU); ``gate.py`` checks output before any speed counts (the lossless gate);
``calls.py`` builds the tool calls; ``launches.py`` reacts to a launch (ready, still loading past the
deadline its progress allowed, refused), ``failures.py`` to a failed one: it looks past the log
(``hardware.py``: a fresh probe and the kernel log) and climbs the remedy ladder (``ladders.py``: the
engine's own advice and the library's remedies, repeated while they help, reverted when they do not;
``remedies.py`` applies one, on the CPU as a KV-space change); ``asking.py`` asks a person with the GPUs
freed first; ``answers.py`` takes the answer (stop, keep waiting, settings); ``choices.py`` compares measured
configurations and keeps the true reason for each; ``drafter.py`` trains an EAGLE-3 drafter (SpecForge's
offline route) when the available one loses; ``progress.py`` is its memory in the state; ``report.py`` the
closing report; ``settings.py`` its numbers (the ``[runbook]`` section of the configuration).
"""
