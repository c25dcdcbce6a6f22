"""The host core: what every agent host of PowerContext shares (standard library only).

Hermes vendors it into its plugin; Claude Code and Codex run it as their hook command,
`python -m powercontext_host <host> <event>`, a new process on every prompt, so nothing here imports
more than the standard library. Transport rules (`transport`), the strict check of a prepare answer
(`prepared`), capture policy (`entries`, `redact`, `split`, `seen`, `remember`) and the contract's
paths and bounds (`_contract`, generated from the spec) live here once.
"""
