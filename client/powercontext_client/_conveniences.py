"""The one table of what the client adds to the contract, read by `devtools/api_generate.py`.

Every operation of `openapi/powercontext.yaml` becomes a method of both clients and a command of
`powercontext`, named by its operationId, with the request's required fields first and its optional
ones as keyword arguments defaulting to `None` (left out of the request). Only what the contract
cannot say is written here: which arguments are positional, names the docs promise that differ from
the operationId, arguments the client accepts in wider forms than the wire, and the few arguments
that are the client's own. Standard library only: the generator loads this file before the code it
generates exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Method:
    """How one operation is a method. `positional` are the arguments before `*`, in order; the
    others are keyword-only, in `keywords` order when given, else required first, then in the
    request's order. `types` and `defaults` are Python source; `extra` are arguments that are not
    request fields ("name: type = default"). `command` is the CLI command ("" for none, or one of
    the CLI's own, `_cli_custom`); `confirm` makes it ask for `--yes` (the reason, when it is left
    out), `clear` adds `--no-X` to send an empty list for that argument."""

    name: str | None = None
    positional: tuple[str, ...] = ("scope_id",)
    keywords: tuple[str, ...] = ()
    types: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    note: str = ""
    command: str | None = None
    generated: bool = True
    confirm: str = ""
    clear: str = ""


@dataclass(frozen=True)
class Argument:
    """How a command line gives an argument, where not as `NAME` or `--name VALUE`: `flags` instead
    of `--name`, `stdin` when `-` reads it from standard input, `json` when it is a JSON object (or
    an answer holding one under the argument's name), `split` when it is these positionals, which
    make the object with the family its model fixes."""

    flags: tuple[str, ...] = ()
    stdin: bool = False
    json: bool = False
    split: tuple[str, ...] = ()


ALIASES: Mapping[str, tuple[str, str]] = {
    "CitationArg": (
        "models.MemoryCitation | Mapping[str, Any]",
        "A Memory citation: the generated `MemoryCitation` model or a plain dict of the same shape.",
    ),
    "BatchEntryArg": (
        "str | models.BatchEntry | Mapping[str, Any]",
        "One entry of a batch: its text alone (the batch's `kind`, else the server's default), the\n"
        'generated `BatchEntry`, or a plain dict `{"text": ..., "kind": ...}`.',
    ),
    "AssemblyArg": (
        "models.Assembly | Mapping[str, Any] | None",
        "The `assembly` object of a prepare request: the generated `Assembly` model (dumped by alias,\n"
        "only the fields that were set, so `Assembly()` is `{}`) or a plain dict, sent as given.",
    ),
    "ExperienceRefArg": (
        "models.ExperienceRef | models.ArtifactRef | Mapping[str, Any]",
        "An exact Experience revision: `ExperienceRef`, an `ArtifactRef` such as `hit.artifact` or\n"
        '`candidate.committed`, or a plain dict `{"family": "experience", "artifact_id": ..., "revision": ...}`.',
    ),
    "TopicRefArg": (
        "models.TopicRef | models.ArtifactRef | Mapping[str, Any]",
        "An exact topic revision: `TopicRef`, an `ArtifactRef` such as `topic.artifact`, or a plain dict\n"
        '`{"family": "topic-memory", "artifact_id": ..., "revision": ...}`.',
    ),
    # `enum:` aliases are the contract's enum at that place: `Schema` or `Schema.property`.
    "FamilyArg": ("enum:Family", "An Artifact family as the wire spells it."),
    "CandidateState": ("enum:ListCandidatesRequest.state", "The state of a Candidate."),
}
"""Argument types the client accepts, emitted into the generated module and exported by the package."""

_PREPARE = Method(
    positional=("scope_id", "query"),
    types={"assembly": "AssemblyArg | Unset"},
    defaults={"assembly": "UNSET"},
    note="`assembly` is left out unless passed; `None` is sent as JSON `null`.",
)
_SEARCH = Method(positional=("scope_id", "query"))
_CITED = Method(positional=("scope_id", "citation"), types={"citation": "CitationArg"})

METHODS: Mapping[str, Method] = {
    "health_live": Method(positional=(), command="health"),
    "health_ready": Method(positional=(), command=""),
    "get_capabilities": Method(name="capabilities", positional=()),
    "list_scopes": Method(positional=("limit", "cursor")),
    "create_scope": Method(
        extra=("exist_ok: bool = False",),
        note="With `exist_ok`, a taken `scope_id` returns the existing Scope as it is.",
    ),
    "update_scope": Method(clear="context_references"),
    "delete_scope": Method(confirm="delete-scope erases the Scope for good"),
    "export_scope": Method(generated=False, command="export"),
    "import_scope": Method(generated=False, command="import"),
    "remember": Method(positional=("scope_id", "text")),
    "remember_batch": Method(
        positional=("scope_id", "entries"),
        keywords=("kind", "deduplicate", "expected_revision"),
        types={"entries": "Sequence[BatchEntryArg]"},
        extra=("kind: str | None = None",),
        note="`kind` applies to the entries given as plain text.",
        command="remember-batch",
    ),
    "revise_memory_entry": Method(
        positional=("scope_id", "citation", "text"),
        types={"citation": "CitationArg", "expires_at": "str | None | Unset"},
        defaults={"expires_at": "UNSET"},
        note="`expires_at` is left out (the expiry is kept) unless passed; `None` is sent as JSON `null` (cleared).",
        clear="expires_at",
    ),
    "retire_memory_entry": _CITED,
    "get_memory_entry": _CITED,
    "erase_memory_entry": Method(positional=("scope_id", "entry_id")),
    "search_memory": _SEARCH,
    "search_experience": _SEARCH,
    "search_topics": _SEARCH,
    "prepare_context": Method(
        positional=_PREPARE.positional,
        types=_PREPARE.types,
        defaults=_PREPARE.defaults,
        note=_PREPARE.note,
        command="prepare",
    ),
    "explain_prepare_context": Method(
        positional=_PREPARE.positional, types=_PREPARE.types, defaults=_PREPARE.defaults, command=""
    ),
    "get_artifact_revision": Method(
        positional=("scope_id", "family", "artifact_id", "revision"), types={"family": "FamilyArg"}
    ),
    "get_experience": Method(positional=("scope_id", "artifact"), types={"artifact": "ExperienceRefArg"}),
    "propose_profile": Method(positional=("scope_id", "content")),
    "approve_candidate": Method(positional=("scope_id", "candidate_id")),
    "reject_candidate": Method(positional=("scope_id", "candidate_id")),
    "list_candidates": Method(types={"state": "CandidateState"}),
    "get_candidate": Method(positional=("scope_id", "candidate_id")),
    "get_topic": Method(positional=("scope_id", "artifact"), types={"artifact": "TopicRefArg"}),
}
"""Per operationId; an operation not listed is a method with `scope_id` positional."""

ARGUMENTS: Mapping[str, Argument] = {
    "text": Argument(stdin=True),
    "content": Argument(stdin=True),
    "citation": Argument(stdin=True, json=True),
    "artifact": Argument(split=("artifact_id", "revision")),
    "context_references": Argument(flags=("--reference", "--ref")),
}
"""Per argument name, in every command that has it."""


def method(operation_id: str) -> Method:
    return METHODS.get(operation_id, Method())


def method_name(operation_id: str) -> str:
    return method(operation_id).name or operation_id
