"""One engine across several hosts: the checks before a multi-node launch (``preflight.py``, the check_nodes
tool; ``nccl.py`` NCCL's own interface choice), and the launch of every rank with readiness from node 0
(``launch.py``)."""
