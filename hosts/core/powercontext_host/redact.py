"""Known secret shapes, replaced by a fixed marker before any text leaves the host.

Captured turns are stored as Memory and later shown to the model again, so a credential pasted
into a conversation must never be written. The shapes are deliberately specific (prefixes and
assignment forms): ordinary prose and code stay as they were.
"""

from __future__ import annotations

import re

MARKER = "[REDACTED]"

# Whole private key blocks; a block cut off before its END line loses its base64 lines too.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----"
    r"(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----"
    r"|(?:\r?\n(?:[A-Za-z0-9+/=]+|[A-Za-z-]+: [^\r\n]*)(?=\r?\n|\Z))*)"
)
# scheme://user:password@host keeps the user.
_URL_PASSWORD = re.compile(r"\b(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:)[^\s@/]+(?=@)")
# An Authorization header keeps its scheme; any credential after it goes.
_AUTH_HEADER = re.compile(
    r"(?P<head>\bAuthorization\s*[:=]\s*[\"']?(?:(?:Bearer|Basic|Token|Digest|Bot)\s+)?)[^\s\"',;]+",
    re.IGNORECASE,
)
# "Bearer <token>" outside a header: the token must look like one (8+ chars with a digit).
_BEARER = re.compile(
    r"(?P<head>\bBearer\s+)(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{8,}=*", re.IGNORECASE
)
# Vendor key shapes: OpenAI/Anthropic (sk-, sk-proj-, sk-ant-), GitHub, AWS access key ids,
# Slack, Google, Stripe.
_KEY_SHAPES = re.compile(
    r"\b(?:"
    r"sk-[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r")"
)
# name = value / name: value, for names that hold secrets (aws_secret_access_key, "api-key", ...).
_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*"
    r"(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|access[_-]?token"
    r"|auth[_-]?token|refresh[_-]?token|client[_-]?secret|token|secret|password|passwd|pwd)"
)
_ASSIGNMENT = re.compile(
    rf"(?P<head>\b{_SECRET_NAME}(?![A-Za-z0-9])[\"']?\s*[:=]\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]*)(?P=quote)|(?P<bare>[^\s\"',;&(){}\[\]]+))",
    re.IGNORECASE,
)
# Annotations and literals that follow such names in code but are not secrets (`token: str`).
_NOT_SECRETS = frozenset({"str", "bytes", "bool", "int", "none", "null", "true", "false", "optional"})


def redact(text: str) -> str:
    """`text` with every known secret shape replaced by MARKER; other text is unchanged."""
    text = _PRIVATE_KEY.sub(MARKER, text)
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MARKER, text)
    text = _AUTH_HEADER.sub(lambda m: m["head"] + MARKER, text)
    text = _BEARER.sub(lambda m: m["head"] + MARKER, text)
    text = _KEY_SHAPES.sub(MARKER, text)
    return _ASSIGNMENT.sub(_redact_assignment, text)


def _redact_assignment(match: re.Match[str]) -> str:
    quote = match["quote"]
    if quote is not None:
        return f"{match['head']}{quote}{MARKER if match['quoted'] else ''}{quote}"
    value = match["bare"]
    if value.lower() in _NOT_SECRETS or set(value) == {"="}:  # `token == other` compares
        return match.group(0)
    return match["head"] + MARKER
