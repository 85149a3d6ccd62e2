"""The one reuse rule: an outcome is kept only while everything it depended on is unchanged.

Each engine gives every ``Outcome`` a ``depends`` digest of what its verdict rests on: the mutant, the code
it was judged against, the tests that reached it and their helpers, the configuration, the interpreter.
A later run keeps an earlier outcome only where that digest is the same: with the same inputs a verdict is
the same (the tests run with a fixed seed), so a kill is kept only while nothing that could make the mutant
survive has changed, and reuse never hides a survivor. An engine gives an outcome no digest where the same
inputs need not give it again (mutmut's "interrupted" or "suspicious"): that one is always judged again.
Code is read as its tokens, so a change of comments or spacing keeps every verdict.
"""

from __future__ import annotations

import hashlib
import io
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from .model import Outcome, Run

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def digest(parts: Iterable[str]) -> str:
    """One SHA-256 of ``parts`` in order, each ended, so that no two lists of parts digest alike."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode())
        sha.update(b"\0")
    return sha.hexdigest()


def interpreter() -> str:
    return f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"


def files_digest(root: Path, files: Iterable[Path]) -> str:
    """The code of ``files``, each named by its place under ``root``; a file that is gone counts as empty."""
    parts = []
    for path in sorted(set(files)):
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        parts += [name, code_of(path.read_text(encoding="utf-8")) if path.is_file() else ""]
    return digest(parts)


def kept(previous: Run | None, mutant_id: str, depends: str) -> Outcome | None:
    """The earlier outcome of ``mutant_id`` if its inputs were exactly ``depends``."""
    if previous is None or not depends:
        return None
    for record in previous.records:
        if record.mutant.id == mutant_id:
            outcome = record.outcome
            if outcome.depends == depends:
                return replace(outcome, reused=True)
            return None
    return None


def code_of(text: str) -> str:
    """``text`` as its code alone: its logical lines of tokens, comments and spacing left out."""
    return "\n".join(key for key, _ in logical_lines(text))


def logical_lines(text: str) -> list[tuple[str, range]]:
    """Each logical line as (its tokens with its depth, the physical lines it spans). Text Python's
    tokenizer refuses (some Cython) is read by physical lines, spacing squeezed, comment lines dropped."""
    try:
        return _tokenized(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            squeezed = " ".join(line.split())
            if squeezed and not squeezed.startswith("#"):
                out.append((f"{len(line) - len(line.lstrip())}|{squeezed}", range(number, number + 1)))
        return out


def _tokenized(text: str) -> list[tuple[str, range]]:
    out: list[tuple[str, range]] = []
    depth, first = 0, 0
    tokens: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.INDENT:
            depth += 1
        elif tok.type == tokenize.DEDENT:
            depth -= 1
        elif tok.type == tokenize.NEWLINE:
            if tokens:
                out.append((f"{depth}|{' '.join(tokens)}", range(first, tok.start[0] + 1)))
            tokens = []
        elif tok.type not in _SKIPPED:
            if not tokens:
                first = tok.start[0]
            tokens.append(tok.string)
    if tokens:
        out.append((f"{depth}|{' '.join(tokens)}", range(first, first + 1)))
    return out
