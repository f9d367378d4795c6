"""Replaces one marked section of a Markdown file (docs/performance.md) by a bench's output."""

from __future__ import annotations

import sys
from pathlib import Path


def replace_section(doc_path: Path, begin: str, end: str, block: str, writer: str) -> None:
    """Puts `block` (which holds both markers) where the `begin`..`end` section stands, or at
    the end when the file has neither; one blank line separates it from what follows. Written
    through a `.partial` file and a rename, so an
    interrupted write never leaves a half-written document."""
    doc_path = Path(doc_path)
    text = doc_path.read_text() if doc_path.exists() else "# Performance\n"
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        rest = text[j + len(end) :].lstrip("\n")
        text = text[:i] + block.rstrip("\n") + "\n" + ("\n" + rest if rest else "")
    elif i >= 0 or j >= 0:
        sys.exit(f"{writer}: {doc_path} has only one of the markers; fix it by hand")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    partial = doc_path.with_suffix(".md.partial")
    partial.write_text(text)
    partial.replace(doc_path)
