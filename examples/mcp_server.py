"""An MCP server: a small notebook, served to any MCP client (Claude Desktop, an IDE, an agent).

An MCP client starts it over stdio as ``python examples/mcp_server.py``; ``python
examples/mcp_server.py --http 8000`` serves it over Streamable HTTP at http://127.0.0.1:8000/mcp
instead. ``scopetool serve examples/mcp_server.py:registry`` (add ``--http 8000``) serves the same
tools. It needs the MCP SDK: ``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel, Field

from scopetool import Effect, Progress, Registry, report_progress, tool
from scopetool.mcp.server import run_http, run_stdio

NOTES: dict[str, str] = {}  # the notebook lives as long as the server process


class Contact(BaseModel):
    """A person to note down."""

    name: str = Field(min_length=1)
    email: str | None = None
    tags: list[str] = []


@tool(effect=Effect.IDEMPOTENT)
def save_note(title: str, text: str) -> str:
    """Save a note, replacing any note with the same title.

    Args:
        title: The note's title.
        text: The note itself.
    """
    NOTES[title] = text
    return f"saved {title!r} ({len(NOTES)} notes in the notebook)"


@tool(effect=Effect.SAFE)
def find_notes(words: list[str]) -> list[str]:
    """The titles of the notes that contain every one of the words, ignoring case.

    Args:
        words: The words to look for.
    """
    found: list[str] = []
    titles = sorted(NOTES)
    for done, title in enumerate(titles, start=1):
        text = f"{title} {NOTES[title]}".lower()
        if all(word.lower() in text for word in words):
            found.append(title)
        report_progress(Progress(done, len(titles), f"searched {title!r}"))
    return found


@tool(effect=Effect.SAFE)
def list_notes(limit: int | None = None) -> list[str]:
    """The titles of the notes, in order; at most `limit` of them when it is given.

    Args:
        limit: The most titles to list.
    """
    return sorted(NOTES)[:limit]


@tool(effect=Effect.IDEMPOTENT)
def save_contact(contact: Contact, starred: bool = False) -> str:
    """Save a contact as a note titled after the person.

    Args:
        contact: The person.
        starred: Whether to mark the contact with a star.
    """
    star = " (starred)" if starred else ""
    NOTES[contact.name] = f"{contact.email or 'no email'}; tags: {', '.join(contact.tags) or 'none'}{star}"
    return f"saved contact {contact.name!r}{star}"


registry = Registry(save_note, find_notes, list_notes, save_contact)
NAME = "notebook"
INSTRUCTIONS = "Save notes with save_note and contacts with save_contact; find them with find_notes or list_notes."

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The notebook MCP server (stdio unless --http is given).")
    parser.add_argument("--http", metavar="PORT", type=int, help="serve Streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    if args.http is None:
        run_stdio(registry, name=NAME, instructions=INSTRUCTIONS)
    else:
        run_http(
            registry, port=args.http, name=NAME, instructions=INSTRUCTIONS, ready=lambda url: print(url, flush=True)
        )
