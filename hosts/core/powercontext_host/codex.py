"""Codex as a hook host: what its `UserPromptSubmit` answer looks like and where a completed turn
is read from. Imported by every hook run, so it stays this small; setup and doctor live in
`codex_setup`.
"""

from __future__ import annotations

from . import claude_code, codex_turn
from .hook import HostAdapter

# Codex reads the same UserPromptSubmit answer as Claude Code and adds `additionalContext` to the
# model request unchanged, as a developer message after the prompt (docs/codex.md).
ADAPTER = HostAdapter("Codex", claude_code.context_output, codex_turn.completed_turn)
