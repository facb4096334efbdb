"""Handing a configuration that works to a cluster manager instead of running it by hand: a SkyPilot task
(clouds, Kubernetes and Slurm through one tool) or a Kubernetes LeaderWorkerSet manifest (``render_deployment``),
and SkyPilot's own CLI to launch and follow it (``launch_deployment``). ``commands.py`` turns the launch into one
command line per rank, ``skypilot.py`` and ``lws.py`` the documents, ``yaml_text.py`` writes them."""
