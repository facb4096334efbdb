"""What no tool may change on the agent's behalf: the agent's own records, its code, its configuration and
the user's credentials. patch_file refuses these paths; the shell sandbox hides or freezes them.

The state directory holds the run's record (state, journal, secrets, backups): a tool that could write it
could forge the history the human reads, so it is outside every writable root, whatever the roots are.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.base import ToolContext

USER_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".config/gh",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".vault-token",
    ".password-store",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".config/opsloop",
)
SYSTEM_SECRETS = (Path("/etc/shadow"), Path("/etc/gshadow"), Path("/etc/sudoers"), Path("/etc/ssh"))


def secret_paths(home: Path) -> list[Path]:
    """The user's and the system's credentials, wherever they exist."""
    return [home / relative for relative in USER_SECRETS] + list(SYSTEM_SECRETS)


def off_limits_reason(path: Path, context: ToolContext) -> str | None:
    """Why the resolved ``path`` must not be written by a tool, or None."""
    places = [
        (context.state_dir, "the state directory (the run's own record)"),
        *((item, "the agent's own code") for item in context.settings.protected_paths),
        *((item, "the agent's configuration") for item in context.settings.hidden_paths),
        *((item, "the user's credentials") for item in secret_paths(Path.home())),
    ]
    for place, what in places:
        real = Path(os.path.realpath(place))
        if path == real or real in path.parents:
            return f"{path} is in {what} ({real}), which no tool may change"
    return None
