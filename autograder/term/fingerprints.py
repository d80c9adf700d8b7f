"""One answer normalised and fingerprinted: the first two steps of
`autograder.term.similarity`.

1. Normalised: parsed with `ast` (split into tokens where it does not parse); comments,
   docstrings, formatting dropped; string literals one token; the names the answer binds
   (variables, parameters, its own functions) renamed to placeholders in order of first use
   within each statement. Attribute and keyword names, and names the answer does not bind
   (`tf`, `np`, `zip`), are kept: `tf.gather` stays `tf.gather`.
2. Fingerprinted: every run of `k` tokens, in the answer's order and again with each
   block's statements sorted, so that reordered independent lines still match.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize
from dataclasses import dataclass, field

PREFIX = "_sim_bound_"  # marks a name the answer binds, until numbered per statement
BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases")


@dataclass
class Statement:
    tokens: tuple[str, ...]
    lines: tuple[int, int]  # its first and last line in the answer (a header's, if compound)
    blocks: list[tuple[str, list[Statement]]] = field(default_factory=list)

    def key(self) -> str:
        inner = ";".join(name + ":" + ",".join(sorted(s.key() for s in block))
                         for name, block in self.blocks)
        return " ".join(self.tokens) + "{" + inner + "}"


def statements(source: str) -> list[Statement]:
    """The answer's statements, normalised (see the module's docstring)."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                       for line in source.splitlines())  # IPython magics and shell lines
    try:
        tree = ast.parse(source)
        _Rename(_bound_names(tree)).visit(tree)
        return _block(tree.body)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: nested too deep
        return _token_statements(source)


def _bound_names(tree: ast.AST) -> set[str]:
    bound, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound - imported


class _Rename(ast.NodeTransformer):
    """Marks the bound names and drops bare strings (docstrings)."""

    def __init__(self, bound: set[str]):
        self.bound = bound

    def _mark(self, name: str) -> str:
        return PREFIX + name if name in self.bound else name

    def visit_Name(self, node):
        node.id = self._mark(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._mark(node.arg)
        return self.generic_visit(node)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        return self.generic_visit(node)

    def _named(self, node):
        node.name = self._mark(node.name) if node.name else node.name
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _named
    visit_ExceptHandler = _named


def _block(body: list) -> list[Statement]:
    found = []
    for node in body:
        blocks = []
        for name in BLOCKS:
            items = getattr(node, name, None) or []
            if name in ("handlers", "cases"):  # each a header with a body of its own
                items = [Statement(_tokens(_header(h)), _header_lines(h),
                                   [("body", _block(h.body))]) for h in items]
                if items:
                    blocks.append((name, items))
            elif items:
                blocks.append((name, _block(items)))
        compound = any(hasattr(node, name) for name in BLOCKS)
        text = _header(node) if compound else ast.unparse(node)
        lines = _header_lines(node) if compound else (node.lineno, node.end_lineno)
        found.append(Statement(_tokens(text), lines, blocks))
    return found


def _header(node) -> str:
    """A compound statement's header (`for x in y:`), its bodies left out."""
    clone = copy.copy(node)
    for name in BLOCKS:
        if hasattr(clone, name):
            setattr(clone, name, [])
    clone.body = [ast.Pass()]
    return ast.unparse(clone).rsplit("\n", 1)[0]


def _header_lines(node) -> tuple[int, int]:
    last = node.lineno
    for name, value in ast.iter_fields(node):
        if name not in BLOCKS:
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    last = max([last] + [getattr(n, "end_lineno", None) or last
                                         for n in ast.walk(child)])
    return node.lineno, last


def _tokens(text: str) -> tuple[str, ...]:
    kept = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING:
                kept.append("S")
            elif tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
                kept.append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return _numbered(kept)


def _numbered(tokens: list[str]) -> tuple[str, ...]:
    """Bound names as _0, _1, ... in order of first use within the statement."""
    names: dict[str, str] = {}
    return tuple(names.setdefault(t, f"_{len(names)}") if t.startswith(PREFIX) else t
                 for t in tokens)


TOKEN = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|#.*|[A-Za-z_]\w*|\d[\w.]*"
                   r"|\*\*=?|//=?|->|[-+*/%@&|^<>!=]=|[^\s\w]")
ASSIGN = {"=", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "**=", "&=", "|=", "^="}


def _token_statements(source: str) -> list[Statement]:
    """Code that does not parse: one statement per line of tokens, bound names guessed."""
    source = re.sub(r"(?s)(\"\"\"|''').*?(\1|$)", lambda m: "'S'" + "\n" * m[0].count("\n"),
                    source)
    lines = []
    for number, line in enumerate(source.splitlines(), 1):
        tokens = ["S" if t[0] in "'\"" else t for t in TOKEN.findall(line) if t[0] != "#"]
        if tokens:
            lines.append((number, tokens))
    bound = set()
    for _, tokens in lines:
        bound |= _guess_bound(tokens)
    return [Statement(_numbered([PREFIX + t if t in bound else t for t in tokens]),
                      (number, number)) for number, tokens in lines]


def _guess_bound(tokens: list[str]) -> set[str]:
    found, depth, target = set(), 0, True
    assigns = any(t in ASSIGN for t in tokens)
    for i, t in enumerate(tokens):
        before = tokens[i - 1] if i else ""
        depth += (t in "([{") - (t in ")]}")
        if t in ASSIGN and depth == 0:
            target = False
        if not (t[0].isalpha() or t[0] == "_") or before == ".":
            continue
        if before in ("def", "class", "for", "as") or (
                tokens[0] == "def" and depth == 1 and before in ("(", ",", "*", "**")) or (
                assigns and target and depth == 0 and tokens[0] not in ("def", "class")):
            found.add(t)
    return found - {"in", "not", "is", "and", "or", "if", "else", "lambda", "None", "True",
                    "False"}


# --- fingerprints ------------------------------------------------------------------------

def _stream(block: list[Statement], stub: set, ordered: bool) -> list[tuple[str, int, int]]:
    """(token, first line, last line) of each token, the release's statements left out."""
    found = []
    for s in block if ordered else sorted(block, key=Statement.key):
        if s.tokens not in stub:
            found += [(t, *s.lines) for t in s.tokens]
        for name, inner in s.blocks:
            if name != "body":
                found.append((name, *s.lines))
            found += _stream(inner, stub, ordered)
    return found


def flatten(block: list[Statement]) -> set[tuple[str, ...]]:
    found = set()
    for s in block:
        found.add(s.tokens)
        for _, inner in s.blocks:
            found |= flatten(inner)
    return found


def fingerprints(block: list[Statement], k: int, stub: set = frozenset()) -> dict[str, set]:
    """Each run of k tokens (in order and with sorted blocks) -> the lines it covers."""
    found: dict[str, set] = {}
    for ordered in (True, False):
        stream = _stream(block, stub, ordered)
        for i in range(len(stream) - k + 1):
            lines = found.setdefault(" ".join(t for t, _, _ in stream[i:i + k]), set())
            for _, first, last in stream[i:i + k]:
                lines.update(range(first, last + 1))
    return found


def own_tokens(block: list[Statement], stub: set = frozenset()) -> int:
    """How many tokens the answer has, the release's statements left out."""
    return len(_stream(block, stub, True))
