"""The text a person reads from the authoring commands (`where`, `check`, `check --links`, `add`,
`edit`): each function returns it from the operation's result (untrusted text escaped), for the
`table` and `plain` formats of their views (`formats.py`) and for their messages on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invmap import location
from invmap.fields import FIELDS
from invmap.safe import escape
from invmap.text import plural


def where_text(data: dict[str, Any]) -> str:
    """The active file and why, then each file it extends (the shipped one said so)."""

    lines = [f"{escape(data['path'])}\t({data['reason']})"]
    lines += [
        f"  extends {escape(base)}" + ("\t(shipped with invmap)" if location.is_shipped(base) else "")
        for base in data["extends"]
    ]
    return "\n".join(lines) + "\n"


def check_text(report: Any) -> str:
    """`PATH: ok, N sources` for a valid catalog; nothing for an invalid one (its problems go to stderr)."""
    return f"{escape(report.location.path)}: ok, {plural(report.sources, 'source')}\n" if report.valid else ""


def _at(path: str, line: str, at: tuple[int, int] | None) -> str:
    return f"{path}:{at[0]}:{at[1]}: {line}" if at else f"{path}: {line}"


def problems_message(report: Any) -> str:
    """Every problem of an invalid catalog at its line and column, counted when more than one."""
    path = report.location.path
    lines = [_at(path, p, at) for p, at in report.located()]
    if len(lines) > 1:
        lines.insert(0, f"{path} has {len(lines)} problems:")
    return "\n".join(lines)


def warning_messages(report: Any, most: int | None = None) -> list[str]:
    """`warning: PATH:LINE:COLUMN: ...` for each warning of a valid catalog (the first `most`, the
    rest counted on one more line)."""
    lines = [f"warning: {_at(report.location.path, w, at)}" for w, at in report.located(most)]
    left = len(report.warnings) - len(lines)
    if left > 0:
        lines.append(f"{plural(left, 'more warning')}; use --all, or a machine format (--json)")
    return lines


def links_text(shown: Sequence[tuple[Any, Any]]) -> str:
    """One line a link: id, field, url and what became of it (`dead 404`)."""
    from invmap import links as linking

    return "".join(f"{escape(k.id)}\t{k.field}\t{escape(k.url)}\t{escape(linking.describe(o))}\n" for k, o in shown)


def links_counted(checked: int, dead: int, warned: int) -> str:
    counts = f"{plural(checked, 'link')} checked, {dead} dead"
    return f"{counts}, {warned} to look at" if warned else counts


def added_text(source: Any, path: str) -> str:
    return f"Added {source.id} to {escape(path)}\n"


def edited_text(edited: Any, path: str) -> str:
    """What `edit` changed, a line a field; `Unchanged` when every value was already so."""
    lines = what_changed(edited.before, edited.after)
    if not lines:
        return f"Unchanged {escape(edited.ident)} in {escape(path)}: every value was already so\n"
    return f"Changed {escape(edited.ident)} in {escape(path)}:\n" + "".join(f"  {line}\n" for line in lines)


def _changed_line(f: Any, old: Any, new: Any) -> str:
    if f.kind.name == "tables":
        return f"{f.name}: {len(old or [])} → {len(new or [])} items"
    if f.kind.many:
        old, new = old or [], new or []
        parts = [f"+{item}" for item in new if item not in old] + [f"-{item}" for item in old if item not in new]
        return f"{f.name}: {escape(', '.join(parts))}"
    shown = [escape(str(v)) if v is not None else "(none)" for v in (old, new)]
    return f"{f.name}: {shown[0]} → {shown[1]}"


def what_changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """`keywords: +prefix caching`, `seam: (none) -> the scheduler`: one line a changed field, in the
    fields' order; a list by the items it gained and lost."""
    return [
        _changed_line(f, before.get(f.name), after.get(f.name))
        for f in FIELDS
        if before.get(f.name) != after.get(f.name)
    ]
