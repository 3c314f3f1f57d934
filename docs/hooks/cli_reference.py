"""A MkDocs hook: the command-line reference page (``cli.md``) from click's own help."""

from __future__ import annotations

from typing import Any

import click

MARKER = "<!-- palaestra-cli -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from palaestra.cli.main import cli

    return markdown.replace(MARKER, "\n".join(_sections(cli)))


def _sections(group: click.Group) -> list[str]:
    root = click.Context(group, info_name="palaestra")
    out = ["## palaestra", "", "```text", group.get_help(root), "```", ""]
    for name in sorted(group.list_commands(root)):
        command = group.get_command(root, name)
        if command is None or command.hidden:
            continue
        context = click.Context(command, info_name=name, parent=root)
        out += [f"## palaestra {name}", "", "```text", command.get_help(context), "```", ""]
    return out
