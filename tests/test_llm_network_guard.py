"""The test suite refuses network access beyond loopback, loudly, even when a client library would retry."""

from __future__ import annotations

import socket

import anthropic
import pytest
from support import network_guard

from twin.model_api.script import ModelTurn
from twin.model_api.server import ModelServer


def test_a_lookup_of_a_remote_host_is_refused_and_recorded() -> None:
    with pytest.raises(network_guard.NetworkRefused):
        socket.getaddrinfo("api.anthropic.com", 443)
    assert network_guard.take_violations() == [
        "the test suite refuses network access beyond loopback (socket.getaddrinfo to 'api.anthropic.com')"
    ]


def test_a_connection_to_a_remote_address_is_refused() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(network_guard.NetworkRefused):
        sock.connect(("203.0.113.7", 443))
    assert len(network_guard.take_violations()) == 1


def test_an_sdk_aimed_at_the_real_api_is_caught_even_though_it_wraps_the_error() -> None:
    client = anthropic.Anthropic(api_key="test-key", max_retries=0)
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(model="claude-sonnet-5-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert network_guard.take_violations()  # without this the autouse fixture would fail the test


def test_loopback_is_allowed() -> None:
    with ModelServer([ModelTurn(text="hello")]) as server:
        client = anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url, max_retries=0)
        reply = client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        client.close()
    assert reply.content[0].type == "text"
    assert network_guard.take_violations() == []
