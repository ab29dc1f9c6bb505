"""An API key that escapes in every way a file can show it, and the files that leak it."""

from __future__ import annotations

import html
import json
import os
import secrets
import zipfile
from pathlib import Path

import markupsafe

#: Printable ASCII without spaces, with every character JSON, HTML or a repr escapes.
KEY = "sk_\"q&u<o>t'e\\s/" + secrets.token_hex(8)


def encodings(secret: str) -> set[str]:
    """The secret as files show it: raw, JSON-, HTML-, repr-escaped, and one escaping inside another."""
    once = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
        html.escape(secret, quote=False),
        html.escape(secret).replace("&#x27;", "&#39;"),
        str(markupsafe.escape(secret)),
        repr(secret)[1:-1],
    }
    twice = {json.dumps(form)[1:-1] for form in once}
    twice |= {html.escape(form) for form in once} | {str(markupsafe.escape(form)) for form in once}
    return once | twice


def leaks(directory: Path, secret: str = KEY) -> list[str]:
    """Files under ``directory`` (zip members too, no symlink followed) holding the secret in some encoding."""
    forms = [form.encode() for form in encodings(secret)]
    found = []
    for folder, _, names in os.walk(directory):
        for name in names:
            path = Path(folder, name)
            if path.is_symlink():
                continue
            blobs = [path.read_bytes()]
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    blobs += [archive.read(member) for member in archive.namelist()]
            for form in forms:
                if any(form in blob for blob in blobs):
                    found.append(f"{path.relative_to(directory)}: {form!r}")
    return found
