"""The shapes of secrets: detect-secrets' detectors, the few shapes it lacks, private-key blocks, and
credentials inside URLs. :mod:`tools.redact` masks what these find.

detect-secrets (Yelp, Apache-2.0) keeps a detector per service: AWS, Slack (tokens and webhook URLs),
GitLab, GitHub, Stripe, SendGrid, npm, PyPI, JWTs, basic-auth URLs and more; its regular-expression
detectors are used here as they are, except the one for public IP addresses (an address is no secret).
Added: model-provider keys (Anthropic, OpenAI project keys, Hugging Face), Google API keys, bearer tokens,
``name=value`` pairs whose name says secret, whole private-key blocks (the detector finds the header; the
body is the secret), and for every URL its password and its secret-named query parameters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from urllib.parse import parse_qsl, urlsplit

import re2

from tools.secret_names import is_secret_name

MASK = "[REDACTED]"
SKIPPED_DETECTORS = {"IPPublicDetector"}
_INLINE_FLAGS = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s", re.VERBOSE: "x"}

_SECRET_KEY = (
    r"(?i:((?:api[_-]?key|token|secret|password|passwd|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|credentials?)[\"']?\s*[:=]\s*[\"']?)"
)
_VALUE = r"[^\s\"',;&]"
# ``name=value`` with a secret name; a number is a count, not a secret ("#token: 547545" in SGLang logs).
ASSIGNMENT = _SECRET_KEY + rf"(?![\d.]+(?:[\s\"',;&]|$)){_VALUE}{{6,}})"
# Its linear-time screen: a superset (any length) that still leaves numbers out, so busy logs stay clean.
ASSIGNMENT_SCREEN = _SECRET_KEY + rf"{_VALUE}*[^\s\"',;&\d.]{_VALUE}*)"
OWN_SHAPES = [
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{16,}",
    r"hf_[A-Za-z0-9]{16,}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"(?i:(bearer\s+)[A-Za-z0-9._\-+/=]{12,})",
    ASSIGNMENT,
]
PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s\"'<>`]+")
SECRET_QUERY_NAMES = {"sig", "signature", "x-amz-signature", "x-goog-signature", "code", "session"}


def _inline(pattern: re.Pattern[str]) -> str:
    flags = "".join(letter for flag, letter in _INLINE_FLAGS.items() if pattern.flags & flag)
    return f"(?{flags}:{pattern.pattern})" if flags else pattern.pattern


@functools.lru_cache(maxsize=1)
def detector_patterns() -> tuple[re.Pattern[str], ...]:
    """The regular expressions of detect-secrets' pattern detectors (imported on first use: it is slow)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    found: list[re.Pattern[str]] = []
    detector: type
    for detector in get_mapping_from_secret_type_to_class().values():
        if issubclass(detector, RegexBasedDetector) and detector.__name__ not in SKIPPED_DETECTORS:
            patterns: Iterable[re.Pattern[str]] = getattr(detector, "denylist")  # noqa: B009  # a class attribute
            found += [re.compile(_inline(pattern)) for pattern in patterns]
    return tuple(found)


@functools.lru_cache(maxsize=1)
def all_patterns() -> tuple[re.Pattern[str], ...]:
    return (*detector_patterns(), *(re.compile(shape) for shape in OWN_SHAPES))


LOOKAROUND = re.compile(r"\(\?<?[=!](?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\)")
URL_SECRETS = [
    r"://[^/\s@:]*:[^/\s@]+@",  # a password in a URL
    r"[?&][^\s=&#]*(?i:key|token|secret|pass|pwd|cred|auth|cookie|private|bearer|session|sig|code)[^\s=&#]*=",
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY",
]


def _for_re2(pattern: re.Pattern[str], json_text: bool) -> str:
    r"""A superset of ``pattern`` in RE2 syntax: lookarounds dropped (so it matches at least as much), huge
    repeat counts capped, and for JSON text every ``\s`` outside a character class also matching ``\n``,
    ``\t`` and ``\r`` as JSON escapes them."""
    source = ASSIGNMENT_SCREEN if pattern.pattern == ASSIGNMENT else LOOKAROUND.sub("", pattern.pattern)
    source = re.sub(r"\{(\d+),\d{4,}\}", r"{\1,1000}", source)
    source = re.sub(r"\(\?([imsx]+):", lambda match: "(?" + match.group(1).replace("x", "") + ":", source)
    source = _rewrite(source, json_text)
    flags = "".join(letter for flag, letter in _INLINE_FLAGS.items() if pattern.flags & flag and letter != "x")
    return f"(?{flags}:{source})" if flags else source


def _json_spaces(source: str) -> str:
    return _rewrite(source, json_text=True)


def _rewrite(source: str, json_text: bool) -> str:
    r"""Outside character classes: every group made non-capturing (RE2 then finds a match's span with its
    fast automaton, never the slower one that tracks groups), and for JSON text ``\s`` widened as above."""
    out, index, in_class = [], 0, False
    while index < len(source):
        if source[index] == "\\" and index + 1 < len(source):
            piece = source[index : index + 2]
            out.append(r"(?:\s|\\[tnr])" if json_text and piece == r"\s" and not in_class else piece)
            index += 2
            continue
        if not in_class and source[index] == "(" and source[index + 1 : index + 2] != "?":
            out.append("(?:")
            index += 1
            continue
        in_class = (in_class and source[index] != "]") or (not in_class and source[index] == "[")
        out.append(source[index])
        index += 1
    return "".join(out)


@functools.lru_cache(maxsize=2)
def screen(json_text: bool = False) -> re2._Regexp:
    """One linear-time expression matching wherever any shape might (a superset): most text holds no
    secret, and one pass says so; ``json_text``: for serialized JSON, where whitespace is escaped."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    parts = [_for_re2(pattern, json_text) for pattern in all_patterns()]
    parts += [_rewrite(part, json_text) for part in URL_SECRETS]
    return re2.compile("|".join(parts), options)


def _regions(text: str) -> list[tuple[int, int]]:
    """The lines around each place the screen matched (a private-key block up to its end), merged."""
    regions: list[tuple[int, int]] = []
    for match in screen().finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        if "PRIVATE KEY" in match.group(0):
            closing = text.find("PRIVATE KEY", match.end())
            end = text.find("\n", closing + 11) if closing >= 0 else -1
        end = len(text) if end < 0 else end
        if regions and start <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(end, regions[-1][1]))
        else:
            regions.append((start, end))
    return regions


def _keep_prefix(match: re.Match[str]) -> str:
    return (match.group(1) or "") + MASK if match.re.groups else MASK


def strip_url(url: str) -> str:
    """The URL with its password and its secret-named query values masked."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password:
        url = url.replace(f":{password}@", f":{MASK}@", 1)
    if parts.query:
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if value and MASK not in value and (is_secret_query(name)):
                url = url.replace(f"{name}={value}", f"{name}={MASK}")
    return url


def is_secret_query(name: str) -> bool:
    return is_secret_name(name) or name.lower() in SECRET_QUERY_NAMES


def mask_shapes(text: str) -> str:
    """``text`` with every secret shape masked. Only the lines the screen points at are examined, and only
    with the expressions whose own linear-time screen matches those lines (usually one of about sixty)."""
    regions = _regions(text)
    if not regions:
        return text
    hit = "\n".join(text[start:end] for start, end in regions)
    maskers = [(pattern, masker) for pattern, screened, masker in _individual() if screened.search(hit)]
    pieces, position = [], 0
    for start, end in regions:
        region = text[start:end]
        for pattern, masker in maskers:
            region = pattern.sub(masker, region)
        pieces += [text[position:start], region]
        position = end
    return "".join(pieces) + text[position:]


@functools.lru_cache(maxsize=1)
def _individual() -> tuple[tuple[re.Pattern[str], re2._Regexp, Callable[[re.Match[str]], str]], ...]:
    """Each masking expression with its own RE2 screen and its masker, in the order they apply."""
    options = re2.Options()
    options.log_errors = False

    def url_masker(match: re.Match[str]) -> str:
        return strip_url(match.group(0))

    entries: list[tuple[re.Pattern[str], str, Callable[[re.Match[str]], str]]] = [
        (PRIVATE_KEY_BLOCK, URL_SECRETS[2], lambda match: MASK),
        (URL, "|".join(URL_SECRETS[:2]), url_masker),
        *((pattern, _for_re2(pattern, False), lambda match: MASK) for pattern in detector_patterns()),
        *((shape, _for_re2(shape, False), _keep_prefix) for shape in all_patterns()[len(detector_patterns()) :]),
    ]
    return tuple((pattern, re2.compile(screened, options), masker) for pattern, screened, masker in entries)
