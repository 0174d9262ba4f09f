"""An MCP server: a small notebook, served over stdio to any MCP client (Claude Desktop, an IDE, an agent).

An MCP client starts it as ``python examples/mcp_server.py``; ``scopetool serve
examples/mcp_server.py:registry`` serves the same tools. It needs the MCP SDK:
``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

from scopetool import Effect, Progress, Registry, report_progress, tool
from scopetool.mcp.server import run_stdio

NOTES: dict[str, str] = {}  # the notebook lives as long as the server process


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


registry = Registry(save_note, find_notes)

if __name__ == "__main__":
    run_stdio(registry, name="notebook", instructions="Save notes with save_note; find them with find_notes.")
