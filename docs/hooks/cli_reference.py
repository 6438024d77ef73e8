"""MkDocs hook: the command-line reference page, generated from the `prefetchsim` argparse parser.

`docs/reference/cli.md` holds the marker `<!-- cli-reference -->`; at build time it becomes one section
per command and subcommand with the `--help` text argparse prints, so the page cannot drift from the code.
"""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- cli-reference -->"


def _walk(parser: argparse.ArgumentParser, name: str):
    """(command name, parser) for `parser` and every subcommand under it, depth first."""
    yield name, parser
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _walk(sub, f"{name} {sub_name}")


def cli_reference() -> str:
    from prefetchsim.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal width; the page has one width
    try:
        parts = []
        for name, parser in _walk(build_parser(), "prefetchsim"):
            depth = name.count(" ")
            heading = "#" * min(2 + max(depth - 1, 0), 4)
            title = f"`{name}`" if depth else "`prefetchsim`"
            parts.append(f"{heading} {title}\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
