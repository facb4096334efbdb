"""Calling SDK methods across releases: parameters an older release does not name go in ``extra_body``.

The project allows ``openai>=2.8`` (SGLang pins 2.8.0) and older ``anthropic`` releases; their ``create``
methods take keyword arguments only for the fields they knew when released and raise ``TypeError`` for
the rest. The HTTP API is what decides, so a newer field (``output_config``, ``prompt_cache_key`` on an old
release, ``reasoning`` effort values) is sent through ``extra_body`` unchanged, and the decision is logged
once per field so that an operator can see which fields an old SDK did not know.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

LOG = logging.getLogger(__name__)
_reported: set[str] = set()


@functools.cache
def _parameters(function: Callable[..., Any]) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return frozenset()


def split_arguments(function: Callable[..., Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the ones ``function`` does not name moved into ``extra_body``."""
    known = _parameters(function)
    if not known or any(
        parameter.kind == inspect.Parameter.VAR_KEYWORD for parameter in inspect.signature(function).parameters.values()
    ):
        return arguments
    direct = {key: value for key, value in arguments.items() if key in known}
    extra = {key: value for key, value in arguments.items() if key not in known}
    for key in extra.keys() - _reported:
        _reported.add(key)
        LOG.info("this SDK release does not name %r; it is sent in the request body as it is", key)
    if extra:
        direct["extra_body"] = {**direct.get("extra_body", {}), **extra}
    return direct
