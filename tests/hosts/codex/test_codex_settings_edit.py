"""The text edit of `[mcp_servers.powercontext]` in Codex's config.toml, on shapes users write:
every other byte stays, and an edit that would change anything else writes nothing."""

from __future__ import annotations

import tomllib

import pytest

from hosts.core.powercontext_host.codex_files import SettingsConflict, mcp_table, set_mcp_server

TABLE = mcp_table(
    "/opt/pc/bin/powercontext", ["--url", "http://h:1", "mcp", 'odd "arg"\\\x7f\x01é'], ["POWERCONTEXT_TOKEN"]
)
OLD = '[mcp_servers.powercontext]\ncommand = "old"\nargs = ["x"]\n\n[mcp_servers.powercontext.env]\nA = "1"\n'


def test_appends_to_a_file_without_a_final_newline_and_renders_every_character() -> None:
    text = 'model = "m"\n[model_providers.p] # mine\nname = "P"'
    updated = set_mcp_server(text, TABLE)
    assert updated.startswith(text + "\n\n[mcp_servers.powercontext]\n")
    assert tomllib.loads(updated)["mcp_servers"]["powercontext"] == TABLE


@pytest.mark.parametrize(
    "header",
    [
        "[mcp_servers.powercontext]",
        '[ mcp_servers . "powercontext" ]  # ours',
        "[mcp_servers.'powercontext']",
    ],
)
def test_replaces_the_table_and_its_sub_tables_in_place(header: str) -> None:
    before = "a = 1\n\n[x]\nb = 2\n\n"
    after = '# about the next one\n[[profiles_list]]\nname = "p"\n'
    text = (
        before
        + OLD.replace("[mcp_servers.powercontext]", header, 1).replace(
            "[mcp_servers.powercontext.env]", header.split("#")[0].rstrip()[:-1] + ".env]"
        )
        + "\n"
        + after
    )
    updated = set_mcp_server(text, TABLE)
    assert updated.startswith(before + "[mcp_servers.powercontext]\n") and updated.endswith("\n\n" + after)
    assert "old" not in updated and tomllib.loads(updated)["mcp_servers"]["powercontext"] == TABLE


def test_removing_the_table_keeps_everything_around_it() -> None:
    text = "a = 1\n\n" + OLD + '\n[mcp_servers.other]\ncommand = "o"\n'
    assert set_mcp_server(text, None) == 'a = 1\n\n[mcp_servers.other]\ncommand = "o"\n'
    assert set_mcp_server("a = 1\n", None) == "a = 1\n"


def test_refuses_what_it_cannot_edit_as_text() -> None:
    with pytest.raises(SettingsConflict, match="not valid TOML"):
        set_mcp_server("a = \n", TABLE)
    with pytest.raises(SettingsConflict, match="by hand"):
        set_mcp_server('[mcp_servers]\npowercontext = { command = "x" }\n', TABLE)
    # A multi-line string that looks like our header: the edit would change it, so it is refused.
    tricky = 'note = """\n[mcp_servers.powercontext]\n"""\n'
    with pytest.raises(SettingsConflict, match="would have changed other settings"):
        set_mcp_server(tricky, TABLE)
