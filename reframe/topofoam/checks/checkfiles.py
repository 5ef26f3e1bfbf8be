"""Which check files of reframe/ a tag selection needs, so that ``./bench run --tag X`` has
ReFrame load those files only.

ReFrame loads every file it is given with -c, and loading all of reframe/ (about 200 test
cases once parameterised) takes about 5 s more than one file (docs/timings.md); the test
suite calls ``./bench run --tag ...`` some 50 times. The files are read, not imported: a
file is left out only when each check it registers (``@rfm.simple_test``) states its tags
as a literal in its own body and none of them passes the selection. Whatever cannot be read
that way (a check whose tags are inherited or computed, a file that does not parse, a
pattern that is not a regular expression) keeps its file, and any code of the checks that
touches a test's ``tags`` at run time (``self.tags |= ...`` in a hook, in a check file or
the library under it) makes every file load, so the selection is never narrower than
ReFrame's.
"""

import ast
import re
from pathlib import Path

from topofoam.paths import CHECKS


def _changes_tags(node: ast.AST) -> bool:
    """Whether a statement changes an object's tags: ``x.tags = ...``, ``x.tags |= ...``,
    ``x.tags.add(...)``, ``x.tags.update(...)``."""

    def is_tags(target: ast.AST) -> bool:
        return isinstance(target, ast.Attribute) and target.attr == "tags"

    if isinstance(node, ast.Assign):
        return any(is_tags(t) for t in node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return is_tags(node.target)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("add", "update") and is_tags(node.func.value)
    return False


def parsed(folder: Path) -> dict[Path, ast.Module | None]:
    """Every Python file under folder, parsed once; None for one that does not parse."""
    trees = {}
    for file in sorted(folder.rglob("*.py")):
        try:
            trees[file] = ast.parse(file.read_text(), filename=str(file))
        except (OSError, SyntaxError, ValueError):
            trees[file] = None  # ReFrame fails on it, wherever it is imported, and says why
    return trees


def registered_checks(tree: ast.Module) -> list[ast.ClassDef]:
    """The classes of a check file that ReFrame registers as checks."""

    def registers(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        return name == "simple_test"

    return [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(registers(d) for d in node.decorator_list)
    ]


def literal_tags(check: ast.ClassDef) -> set[str] | None:
    """The tags a check's own body states as a literal; None when it states none (they are
    inherited) or they are computed."""
    for node in check.body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        if "tags" in names:
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                return None
            if isinstance(value, (set, frozenset, list, tuple)):
                return {str(tag) for tag in value}
            return None
    return None


def passes(tags: set[str], patterns: list[str]) -> bool:
    """ReFrame's -t selection: every pattern finds a tag (re.search), a ``!pattern`` none."""
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = re.compile(pattern[1:] if negated else pattern)
        if any(regex.search(tag) for tag in tags) == negated:
            return False
    return True


def _mentions_simple_test(tree: ast.Module) -> int:
    """How often a file names ``simple_test`` (as a decorator, a call or otherwise)."""
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "simple_test")
        or (isinstance(node, ast.Name) and node.id == "simple_test")
    )


def needed(tree: ast.Module | None, patterns: list[str]) -> bool:
    if tree is None:
        return True  # ReFrame says what is wrong with it
    checks = registered_checks(tree)
    if _mentions_simple_test(tree) > len(checks):
        return True  # registered some other way (rfm.simple_test(Cls), a nested class): unread
    for check in checks:
        tags = literal_tags(check)
        if tags is None or passes(tags, patterns):
            return True
    return False


def for_tags(patterns: list[str], folder: Path = CHECKS) -> list[Path]:
    """What to give ReFrame's -c for a run with these -t patterns: the check files of folder
    (its *.py, as ReFrame reads a folder without -R) that may hold a selected check; the
    folder itself when there are no patterns, a pattern is not a regular expression, the
    checks change tags at run time, or no file is selected (ReFrame then says that nothing
    matched, as it would have)."""
    if not patterns:
        return [folder]
    try:
        for pattern in patterns:
            re.compile(pattern.removeprefix("!"))
    except re.error:
        return [folder]
    trees = parsed(folder)
    if any(_changes_tags(node) for tree in trees.values() if tree for node in ast.walk(tree)):
        return [folder]
    files = [f for f, tree in trees.items() if f.parent == folder and needed(tree, patterns)]
    return files or [folder]


def tags_of(reframe_args: list[str]) -> list[str]:
    """The -t patterns of a ReFrame command line (``-t X``, ``--tag X``, ``--tag=X``); a form
    not read here leaves its pattern out, and so loads more files, never fewer."""
    tags = [arg.removeprefix("--tag=") for arg in reframe_args if arg.startswith("--tag=")]
    pairs = zip(reframe_args, reframe_args[1:])
    return tags + [value for option, value in pairs if option in ("-t", "--tag")]


def tag_options(patterns: list[str], folder: Path = CHECKS) -> list[str]:
    """ReFrame's -c options for a selection by these -t patterns (for_tags)."""
    return [arg for f in for_tags(patterns, folder) for arg in ("-c", str(f))]


def options(reframe_args: list[str], folder: Path = CHECKS) -> list[str]:
    """ReFrame's -c options for a command line's own -t patterns."""
    return tag_options(tags_of(reframe_args), folder)
