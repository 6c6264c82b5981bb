"""Secrets are compared in constant time: a static check, since no behaviour shows the difference.

Every ``==``, ``!=``, ``in`` or ``not in`` whose operands name a seat token, a token hash, a request
hash, a fingerprint, an API key or a MAC tag must instead be ``hmac.compare_digest``. Comparisons
with a literal (``len(token) == 43`` style checks of shape, or ``is None``) reveal nothing and are
allowed. The check reads every module of the engine, the service and the client.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import basra.client
import basra.engine
import basra.service
from basra.service import auth as auth_module

# The hand-written packages of the ``basra`` namespace, one a component (the stubs are generated).
PORTIONS = [Path(p.__path__[0]) for p in (basra.engine, basra.service, basra.client)]
# Names that hold a secret or a value derived from one. `presented`/`expected` are what
# check_api_key calls the two keys; `sealed` and `tag` are the creation record's ciphertext and MAC.
SECRET = re.compile(
    r"token|hash|fingerprint|api_?key|digest|secret|presented|^expected$|sealed|(^|_)tag($|_)|mac",
    re.IGNORECASE,
)
# Fields that only look like secrets: versions, counts and error reasons are public.
PUBLIC = re.compile(r"version|count|len|size|reason|_S$|_BYTES$|seats?$", re.IGNORECASE)
LEAKY_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def names_in(node: ast.expr) -> Iterator[str]:
    """The identifiers an operand is built from (variables, attributes, called functions)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr


def is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
    )


def is_secret(node: ast.expr) -> bool:
    return any(SECRET.search(n) and not PUBLIC.search(n) for n in names_in(node))


def is_public(node: ast.expr) -> bool:
    """A literal, a length, or a public figure (``expected != record.version``)."""
    return is_literal(node) or any(PUBLIC.search(n) for n in names_in(node))


def leaky_comparisons(source: str, filename: str) -> Iterator[str]:
    """``file:line: code`` of each comparison of a secret by a short-circuiting operator."""
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, (left, right) in zip(node.ops, pairwise(operands), strict=True):
            if not isinstance(op, LEAKY_OPS) or is_public(left) or is_public(right):
                continue
            if is_secret(left) or is_secret(right):
                yield f"{filename}:{node.lineno}: {ast.unparse(node)}"


def test_every_secret_comparison_in_basra_uses_compare_digest() -> None:
    modules = sorted(p for root in PORTIONS for p in root.rglob("*.py"))
    assert any(p.name == "auth.py" for p in modules), "the check reads the service's auth"
    leaks = [leak for path in modules for leak in leaky_comparisons(path.read_text(), str(path))]
    assert not leaks, "compare secrets with hmac.compare_digest:\n" + "\n".join(leaks)


def test_the_comparisons_of_auth_are_the_ones_the_check_reads() -> None:
    """The check sees what it must: compare_digest calls exist and a leaky form is caught."""
    auth = Path(auth_module.__file__).read_text()
    assert auth.count("hmac.compare_digest(") >= 3
    caught = [
        "if presented != expected: pass",
        "seat = hashes.index(token_hash(token)) if token_hash(token) in hashes else -1",
        "ok = previous.request_hash == asked",
        "ok = previous.fingerprint != fingerprint",
        "ok = tag == hmac.new(key, body, hashlib.sha256).digest()[:16]",
    ]
    for code in caught:
        assert list(leaky_comparisons(code, "example.py")), code
    allowed = [
        "ok = len(token) == 43",
        "ok = record.version == expected_version",
        "ok = token is None",
        "ok = hmac.compare_digest(presented, stored)",
    ]
    for code in allowed:
        assert not list(leaky_comparisons(code, "example.py")), code
