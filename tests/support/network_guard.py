"""Refuse network access beyond loopback in the test suite, loudly.

A Python audit hook (``sys.addaudithook``, a standard interpreter mechanism: nothing is patched) sees
every ``socket.getaddrinfo`` and ``socket.connect`` of this process. Lookups of other hosts and
connections to non-loopback addresses raise :class:`NetworkRefused` and are recorded; the autouse
fixture fails the test that made them, even when a client library swallowed the error (the model SDKs
turn it into a connection error and would otherwise retry quietly). Child processes are not covered.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
violations: list[str] = []
_installed = False


class NetworkRefused(ConnectionRefusedError):
    """A test tried to reach a host other than this machine."""


def is_local(host: object) -> bool:
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name.lower() in LOCAL_NAMES or name == socket.gethostname():
        return True
    try:
        address = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _audit(event: str, arguments: tuple[Any, ...]) -> None:
    if event == "socket.getaddrinfo":
        host = arguments[0]
    elif event == "socket.connect":
        sock, address = arguments
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
            return
        host = address[0]
    else:
        return
    if not is_local(host):
        message = f"the test suite refuses network access beyond loopback ({event} to {host!r})"
        violations.append(message)
        raise NetworkRefused(message)


def take_violations() -> list[str]:
    """The refusals recorded since the test started, cleared (for tests of the guard itself)."""
    found = list(violations)
    violations.clear()
    return found


def install() -> None:
    """Install the audit hook once for this process (audit hooks cannot be removed)."""
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _installed = True


@pytest.fixture(autouse=True)
def refuse_non_loopback_network() -> Iterator[None]:
    install()
    violations.clear()
    yield
    found = take_violations()
    if found:
        pytest.fail("this test tried to reach the network: " + "; ".join(found[:3]), pytrace=False)
