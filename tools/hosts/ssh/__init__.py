"""Hosts reached over SSH with OpenSSH's own client (``target.py`` what to reach and how the user's configuration
resolves it, ``connection.py`` the shared connection and its errors, ``channel.py`` the request channel to the
remote helper, ``host.py`` the :class:`~tools.hosts.base.Host`, ``gpus.py`` GPU facts from ``nvidia-smi``)."""
