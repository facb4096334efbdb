"""Which shell commands need a human's approval before they run.

Flagged: recursive deletes (``rm -r``, ``find -delete``/``-exec rm``) of ``/``, a top-level
directory, the home directory or the state directory (or anything containing them); ``mkfs`` and
other disk formatting or partitioning; ``dd``, ``tee`` or redirections onto block devices; shutdown,
reboot, halt, poweroff (also through ``systemctl``/``init``); GPU resets (``nvidia-smi -r`` /
``--gpu-reset``, unloading the nvidia driver, PCI reset files); and ``kill``/``pkill``/``killall``
whose targets are not processes the agent started. Anything the guard cannot resolve (an unset
variable in a delete target, a PID from a command substitution) is flagged too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from tools.shell.parse import SUBSTITUTION, SimpleCommand, parse

SAFE_DEVICES = re.compile(r"^/dev/(null|zero|u?random|full|stdout|stderr|stdin|tty\w*|pts/\d+|fd/\d+|shm/.*)$")
BLOCK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|nbd|disk/|mapper/|mapper$|sg|sr|mtd)")
FORMATTERS = re.compile(r"^(mkfs(\..+)?|mke2fs|mkswap|wipefs|mkfs_\w+|newfs\w*)$")
PARTITIONERS = {"fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "blkdiscard"}
POWER = {"shutdown", "reboot", "halt", "poweroff", "kexec"}
SYSTEMCTL_POWER = {
    "reboot",
    "poweroff",
    "halt",
    "kexec",
    "suspend",
    "hibernate",
    "hybrid-sleep",
    "emergency",
    "rescue",
    "soft-reboot",
}
KILL_SIGNAL_OPTIONS = {"-s", "-n", "--signal"}
SIGNAL_OPTION = re.compile(r"-(\d+|(SIG)?[A-Z][A-Z0-9+-]{2,})")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Danger:
    command: str
    reason: str


@dataclass
class GuardContext:
    """What the guard knows: where deletes would hurt, and which processes belong to the agent.

    ``owned_pids`` are PIDs the agent started (with their process-group members);
    ``match_processes(pattern_args)`` runs ``pgrep`` with those arguments and returns PIDs, or None
    when that is not possible.
    """

    home: Path
    state_dir: Path
    cwd: Path
    owned_pids: set[int]
    match_processes: Callable[[list[str]], list[int] | None]
    # Symbolic links are resolved, and variables expanded, as on the host the command runs on.
    resolve: Callable[[str], str] = os.path.realpath
    variables: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def expand(self, raw: str) -> str:
        """``~`` and ``$NAME``/``${NAME}`` expanded with the host's home and variables (unknown ones kept)."""
        text = raw.replace("${HOME}", str(self.home))
        if text == "~" or text.startswith("~/"):
            text = str(self.home) + text[1:]
        return _VARIABLE.sub(lambda match: self.variables.get(match.group(1) or match.group(2), match.group(0)), text)


def _protected(context: GuardContext) -> list[Path]:
    return [Path("/"), Path(context.resolve(str(context.home))), Path(context.resolve(str(context.state_dir)))]


def delete_target_problem(raw: str, context: GuardContext) -> str | None:
    """Why deleting ``raw`` recursively is dangerous, or None."""
    if SUBSTITUTION in raw:
        return f"the target {raw!r} comes from a command substitution"
    expanded = context.expand(raw)
    if "$" in str(context.cwd) and not expanded.startswith("/"):
        return f"the target {raw!r} is relative to a directory that cannot be resolved here"
    if "$" in expanded:
        return f"the target {raw!r} holds a variable that is not set here (it could expand to '/')"
    glob_at = min((expanded.find(mark) for mark in "*?[" if mark in expanded), default=-1)
    if glob_at >= 0:  # a glob deletes the contents of the directory it starts in
        expanded = expanded[:glob_at].rsplit("/", 1)[0] or "/"
    path = Path(os.path.normpath(os.path.join(context.cwd, expanded)))
    real = Path(context.resolve(str(path)))
    for candidate in {path, real}:
        if candidate == Path("/"):
            return f"{raw!r} is the root directory"
        for protected in _protected(context)[1:]:
            if protected == candidate or candidate in protected.parents:
                what = "the home directory" if protected == _protected(context)[1] else "the state directory"
                return f"{raw!r} is or contains {what} ({protected})"
        if len(candidate.parts) <= 2:
            return f"{raw!r} is a top-level directory"
    return None


def _rm(command: SimpleCommand, context: GuardContext) -> list[str]:
    options, targets, after_dashes = [], [], False
    for item in command.argv[1:]:
        if item == "--" and not after_dashes:
            after_dashes = True
        elif item.startswith("-") and not after_dashes and item != "-":
            options.append(item)
        else:
            targets.append(item)
    recursive = any(re.fullmatch(r"-[a-zA-Z]*[rR][a-zA-Z]*", option) or option == "--recursive" for option in options)
    reasons = ["--no-preserve-root removes the root guard"] if "--no-preserve-root" in options else []
    if not recursive:
        return reasons
    if command.args_from_stdin:
        reasons.append("recursive delete of paths that arrive on stdin (xargs)")
    return reasons + [
        f"recursive delete: {problem}" for target in targets if (problem := delete_target_problem(target, context))
    ]


def _find(command: SimpleCommand, context: GuardContext) -> list[str]:
    argv = command.argv
    deletes = "-delete" in argv or any(
        argv[index] in ("-exec", "-execdir", "-ok", "-okdir")
        and index + 1 < len(argv)
        and Path(argv[index + 1]).name in ("rm", "shred")
        for index in range(len(argv))
    )
    if not deletes:
        return []
    starts = []
    for item in argv[1:]:
        if item.startswith("-") or item in ("(", "!", ")"):
            break
        starts.append(item)
    return [
        f"find deletes recursively: {problem}"
        for start in (starts or ["."])
        if (problem := delete_target_problem(start, context))
    ]


def _git_clean(command: SimpleCommand, context: GuardContext) -> list[str]:
    """``git clean -x`` deletes ignored files, which include the default state directory."""
    flags = "".join(item.lstrip("-") for item in command.argv[2:] if item.startswith("-") and not item.startswith("--"))
    forced = "f" in flags or "--force" in command.argv
    if not forced or not ("x" in flags or "X" in flags):
        return []
    state = Path(context.resolve(str(context.state_dir)))
    cwd = Path(context.resolve(str(context.cwd)))
    return [f"git clean -x here would delete the state directory {state}"] if cwd in state.parents else []


def _writes_to_device(targets: list[str]) -> list[str]:
    return [
        f"writes onto the device {target}"
        for target in targets
        if target.startswith("/dev/") and not SAFE_DEVICES.match(target) and BLOCK_DEVICE.match(target)
    ]


def _kill(command: SimpleCommand, context: GuardContext) -> list[str]:
    argv, name = command.argv, command.name
    if name == "kill":
        if any(item in ("-l", "-L", "--list", "--table") for item in argv[1:]):
            return []
        targets: list[str] = []
        index = 1
        while index < len(argv):
            item = argv[index]
            if item in KILL_SIGNAL_OPTIONS:
                index += 2
                continue
            if (
                item == "--"
                or (item.startswith("-") and not re.fullmatch(r"-\d+", item))
                or (re.fullmatch(r"-\d+", item) and not targets and index == 1)
            ):
                index += 1  # a signal such as -9 or -KILL (only in first position for numbers)
                continue
            targets.append(item)
            index += 1
        if command.args_from_stdin:
            return ["kill of PIDs that arrive on stdin (xargs) cannot be checked"]
        return [problem for target in targets if (problem := _kill_target_problem(target, context))]
    pattern_args, index = [], 1
    while index < len(argv):
        item = argv[index]
        if item in KILL_SIGNAL_OPTIONS:
            index += 2
            continue
        if not (SIGNAL_OPTION.fullmatch(item) or item.startswith("--signal=")):
            pattern_args.append(item)
        index += 1
    if name == "killall":
        names = [item for item in pattern_args if not item.startswith("-")]
        regex = any(item in ("-r", "--regexp") for item in pattern_args)
        matched: list[int] | None = []
        for process_name in names:
            found = context.match_processes([process_name] if regex else ["-x", process_name])
            matched = None if found is None or matched is None else matched + found
    else:
        matched = context.match_processes(pattern_args)
    if matched is None:
        return [f"{name} {' '.join(pattern_args)}: cannot tell which processes it would signal"]
    foreign = sorted(pid for pid in matched if pid not in context.owned_pids)
    return (
        [f"{name} would signal processes the agent did not start (PIDs {', '.join(map(str, foreign))})"]
        if foreign
        else []
    )


def _kill_target_problem(target: str, context: GuardContext) -> str | None:
    if target.startswith("%"):
        return None  # a job of this shell
    if not re.fullmatch(r"-?\d+", target):
        return f"kill target {target!r} is not a PID that can be checked"
    number = int(target)
    if number == -1:
        return "kill -1 signals every process the user can reach"
    if number == 0:
        return None  # the command's own process group
    if abs(number) not in context.owned_pids:
        kind = "process group" if number < 0 else "process"
        return f"{kind} {abs(number)} was not started by the agent"
    return None


def _power_and_gpu(command: SimpleCommand) -> list[str]:
    argv, name = command.argv, command.name
    if name in POWER:
        return [f"{name} stops or restarts the machine"]
    if name in ("init", "telinit") and any(item in ("0", "6") for item in argv[1:]):
        return [f"{name} {' '.join(argv[1:])} stops or restarts the machine"]
    if name == "systemctl" and any(item in SYSTEMCTL_POWER for item in argv[1:]):
        return ["systemctl changes the machine's power state"]
    if name == "nvidia-smi" and any(
        item in ("-r", "--gpu-reset") or item.startswith("--gpu-reset=") for item in argv[1:]
    ):
        return ["nvidia-smi -r resets a GPU, killing every process on it"]
    if (
        name in ("rmmod", "modprobe")
        and any(item.startswith("nvidia") for item in argv[1:])
        and (name == "rmmod" or "-r" in argv or "--remove" in argv)
    ):
        return ["unloading the nvidia driver resets every GPU"]
    return []


def judge(command_line: str, context: GuardContext) -> list[Danger]:
    """The reasons this command line needs approval (empty: it may run). Raises ParseError."""
    dangers: list[Danger] = []
    for command in parse(command_line):
        name, reasons = command.name, []
        if name in ("cd", "pushd") and len(command.argv) > 1:
            # Later relative paths resolve against the new directory; an unknown one makes them unknown.
            target = context.expand(command.argv[1])
            unknown = "$" in target or SUBSTITUTION in target
            context = replace(context, cwd=Path("/$unknown") if unknown else Path(context.cwd, target))
        if name == "rm":
            reasons += _rm(command, context)
        elif name == "find":
            reasons += _find(command, context)
        elif FORMATTERS.match(name):
            reasons.append(f"{name} formats a filesystem")
        elif name in PARTITIONERS and not any(item in ("-l", "--list", "print") for item in command.argv[1:]):
            reasons.append(f"{name} changes disk partitions")
        elif name == "dd":
            reasons += _writes_to_device([item[3:] for item in command.argv[1:] if item.startswith("of=")])
        elif name in ("tee", "cp", "mv", "shred", "truncate", "install"):
            reasons += _writes_to_device(command.argv[1:])
        elif name in ("kill", "pkill", "killall"):
            reasons += _kill(command, context)
        elif name == "git" and "clean" in command.argv[1:3]:
            reasons += _git_clean(command, context)
        reasons += _power_and_gpu(command)
        reasons += _writes_to_device(command.redirects)
        reasons += [
            f"writes to {target}, which resets or removes hardware"
            for target in command.redirects
            if re.match(r"^/sys/bus/pci/.*/(reset|remove)$|^/proc/sysrq-trigger$", target)
        ]
        dangers += [Danger(command=command.text or "(redirection)", reason=reason) for reason in reasons]
    return dangers
