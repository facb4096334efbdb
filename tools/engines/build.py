"""Choose the flag builder for the configured engine, give it the flags the installed release accepts, and
finish its command (extra flags, explicit environment).

Flags come from the release data for exactly that release (:func:`known_flags`), or from the engine's ``--help``
(:mod:`tools.engines.help_probe`); a version the data cannot place is never taken for the newest release.
"""

from __future__ import annotations

from engine_facts.accepted_flags import FlagSet, from_release_data
from engine_facts.versions import describe_version, parse_release
from tools.engines import sglang_flags, vllm_flags
from tools.engines.command import EngineCommand, FlagsUnknown
from tools.engines.config import EngineLaunchConfig
from tools.records import EngineInstall


def known_flags(engine: str, engine_version: str | None) -> FlagSet:
    """The release data's flags for exactly this release; raises :class:`FlagsUnknown` otherwise."""
    release = parse_release(engine_version)
    flags = from_release_data(engine, release) if release is not None else None
    if flags is None:
        raise FlagsUnknown(
            f"{engine} {describe_version(engine, engine_version)}: its flags are not in the "
            "release data; they must be read from the installed engine's --help"
        )
    return flags


def build_command(
    config: EngineLaunchConfig,
    engine_python: str,
    engine_version: str | None,
    flags: FlagSet | None = None,
    compute_capability: str | None = None,
    install: EngineInstall | None = None,
) -> EngineCommand:
    """Flags for the installed release (``flags``, default: the release data for ``engine_version``). ``install``
    (from the probe) says which distribution provides the engine, which decides vLLM's entry point."""
    accepted = flags or known_flags(config.engine, engine_version)
    if config.engine == "sglang":
        command = sglang_flags.build(config, engine_python, accepted)
    else:
        command = vllm_flags.build(config, engine_python, accepted, compute_capability, install)
    command.argv += config.extra_flags
    command.env.update(config.env)  # explicit environment wins over what the builder chose
    command.engine_version = engine_version
    command.flags_from = (
        f"release data {accepted.version}" if accepted.origin == "release_data" else f"--help of {accepted.version}"
    )
    return command
