"""The helper an SSH host runs on the remote machine: one long-lived process per connection that answers
JSON requests (run a command, start a supervised process, check or signal one, read a log from its end, read
or write a confined file, try a TCP connection, list network interfaces).

Standard library only, Python 3.8 or newer at run time: it is shipped as a zip of the modules it needs
(:mod:`tools.hosts.remote.bundle`) and must not import anything else from this package.
"""
