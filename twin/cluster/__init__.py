"""A real network for a multi-node scenario: one Linux network namespace per node, joined by veth pairs on a
bridge, each node with its own address and its own OpenSSH server on a generated host key (``network.py`` the
namespaces and links, ``sshd.py`` keys, servers and the client's SSH configuration, ``build.py`` both together
and the teardown). ``python -m twin.cluster up SCENARIO DIR`` builds one by hand; ``down DIR`` removes it.

Needs root, iproute2 and openssh-server. The namespaces share the file system with the machine that builds
them, so the stand-ins started on a node over SSH are this checkout's own.
"""
