"""Choosing among a feature's spellings by what the release accepts, keeping the reason for each choice."""

from __future__ import annotations

from engine_facts.accepted_flags import AcceptedFlag, FlagSet
from engine_facts.release_facts import first_release_with, release_view
from engine_facts.versions import parse_release
from tools.engines.command import EngineCommand, FeatureMissing, VersionChoice

NAMES = {"sglang": "SGLang", "vllm": "vLLM"}


class Chooser:
    """Collects argv, environment, the reasons for version-dependent choices and the missing features."""

    def __init__(self, flags: FlagSet, command: EngineCommand) -> None:
        self.flags, self.command = flags, command
        self.missing: list[str] = []
        self.engine = f"{NAMES.get(flags.engine, flags.engine)} {flags.version}"

    def where(self, flag: AcceptedFlag | None) -> str:
        if flag is None or flag.source is None:
            return "" if self.flags.origin == "release_data" else " (per its --help)"
        return f" ({flag.source})"

    def pick(self, feature: str, *candidates: str) -> str | None:
        """The first candidate flag the release accepts (exact name), with the reason recorded."""
        for position, name in enumerate(candidates):
            flag = self.flags.flag(name)
            if flag is None:
                continue
            rejected = list(candidates[:position])
            reason = f"{self.engine} accepts {name}{self.where(flag)}"
            if rejected:
                reason += f"; it does not accept {', '.join(rejected)}"
                first = first_release_with(self.flags.engine, "flags", rejected[0])
                if first:
                    reason += f" (first read in {first})"
            if flag.deprecated:
                reason += "; deprecated there but still accepted"
            self.choose(feature, name, reason)
            return name
        self.lack(feature, f"none of {', '.join(candidates)} is accepted by {self.engine}")
        return None

    def choose(self, feature: str, decision: str, reason: str) -> None:
        self.command.choices.append(VersionChoice(feature=feature, decision=decision, reason=reason))

    def lack(self, feature: str, reason: str) -> None:
        self.missing.append(f"{feature}: {reason}")

    def check_choice(self, flag_name: str, value: str) -> bool:
        flag = self.flags.flag(flag_name)
        if flag is None or not flag.choices or value in flag.choices:
            return True
        self.lack(flag_name, f"{value!r} is not among {self.engine}'s choices ({', '.join(flag.choices)})")
        return False

    def env_known(self, name: str, declared_in: str | None = None) -> bool | None:
        """Whether the release reads the variable (declared in ``declared_in`` when given): True/False from
        the release data, None when the flags came from --help and the data says nothing."""
        release = parse_release(self.flags.version) if self.flags.origin == "release_data" else None
        view = release_view(self.flags.engine, release) if release else None
        if view is None:
            return None
        fact = view.env.get(name)
        return fact is not None and (declared_in is None or fact.source == declared_in)

    def finish(self) -> EngineCommand:
        if self.missing:
            raise FeatureMissing(self.engine.split(" ")[0], self.flags.version, self.missing)
        return self.command
