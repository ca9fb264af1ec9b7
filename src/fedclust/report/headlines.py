"""The headline engine (see :mod:`fedclust.report.headline`): a section's headline is read from
the tables its stage's report has just written, declared as a :class:`Spec` (a list of
:class:`Line`) and evaluated by one mechanism, :func:`build`. Each stage declares its ``HEADLINE``
spec next to its section builder, in ``fedclust.<stage>.report``, and passes
``build(HEADLINE, tables, figures)`` (the section's own table and figure entries) as
``Section(headline=...)``; :mod:`fedclust.sections` lists every stage's spec. This module
imports no stage.

A line declares the quantity, the source value (the published number of the seed documents,
/work/shared/spec/seed_00N.md, or a column of the table that prints it beside ours), how ours is
read (which table - found by a piece of its path -, which rows, which column or reduction), the
tolerance and the documented *cause* of a difference. The headline's sentence is derived from
the rows (:func:`fedclust.report.headline.sentence_for`): it names the matching rows and, for
each differing row, that row's cause, so it always agrees with the table.

A table the section does not have gives the row "not in this run" with "not run in this config"
as the reason; a value that cannot be read (a column renamed) gives "not in this run" with the
error in the note: a headline never stops the report.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .headline import headline, row
from .html import Section, write_section

log = logging.getLogger(__name__)
_LEAD = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
NOT_RUN = "not run in this config"
_READ_ERRORS = (KeyError, IndexError, ValueError, TypeError, AttributeError, OSError)


def lead(v: Any) -> float | None:
    """The leading number of a cell such as ``"0.614 (±0.078)"`` or ``"0.760 ± 0.028"``."""
    if v is None:
        return None
    if isinstance(v, int | float):
        return None if isinstance(v, float) and math.isnan(v) else float(v)
    m = _LEAD.match(str(v))
    return float(m.group(1)) if m else None


def read_frame(path: str | Path) -> pd.DataFrame:
    """A result table without its index (tab-separated for ``.tsv``/``.tsv.gz``, else CSV)."""
    path = Path(path)
    return pd.read_csv(path, sep="\t" if ".tsv" in path.name else ",")


def tab(tables: list[dict], key: str) -> str:
    """The path of the first table entry whose path contains ``key`` (KeyError if none)."""
    for t in tables:
        if key in str(t.get("path", "")):
            return str(t["path"])
    raise KeyError(f"no table with {key!r} in its path")


def opt_tab(tables: list[dict], key: str) -> str | None:
    try:
        return tab(tables, key)
    except KeyError:
        return None


# ------------------------------------------------------------------------------- the mechanism
@dataclass(frozen=True)
class Sel:
    """What a line's readers see: the table (``table``, as read from ``path``), the rows that
    ``Line.where`` selected (``frame``) and the one row ``Line.pick`` chose (``row``)."""

    path: str
    table: pd.DataFrame
    frame: pd.DataFrame
    row: pd.Series


@dataclass(frozen=True)
class Col:
    """The value of column ``name`` in the picked row, optionally parsed (e.g. :func:`lead`)."""

    name: str
    parse: Callable[[Any], Any] | None = None

    def __call__(self, s: Sel) -> Any:
        v = s.row[self.name]
        return self.parse(v) if self.parse else v


@dataclass(frozen=True)
class Agg:
    """A reduction (``max``, ``min``, ``mean``) of column ``name`` over the selected rows."""

    name: str
    how: str

    def __call__(self, s: Sel) -> Any:
        if s.frame.empty:
            raise IndexError(f"no rows to take the {self.how} of {self.name!r}")
        return getattr(s.frame[self.name], self.how)()


Reader = Any  # a constant, or Callable[[Sel], Any] (Col, Agg or a function)


@dataclass(frozen=True)
class Line:
    """One declared headline row.

    quantity: the row's name (``label(sel)`` may refine it from the table, e.g. the round);
    source / ours: a constant or a reader of the selected table rows (:class:`Col`,
    :class:`Agg` or a function of :class:`Sel`); table: a piece of the table's path, or several
    (the first the section has is read); where: ``{column: value}`` (equality) or a function of
    the table returning the selected rows; pick: the row ``Col`` reads ("first" or "last");
    tol: tolerance (constant or reader; None: the headline default); cause: why ours may differ
    from the source (a constant or a reader), quoted in the sentence when the row differs;
    each: one headline row per selected table row (``label`` names it); comparable: "" or
    why ours measures something else than the source (other data or size; a reader): such a
    row is shown but never compared."""

    quantity: str
    source: Reader
    ours: Reader
    table: str | tuple[str, ...]
    cause: Reader
    where: Mapping[str, Any] | Callable[[pd.DataFrame], pd.DataFrame] | None = None
    pick: str = "first"
    label: Callable[[Sel], str] | None = None
    note: Reader = ""
    tol: Reader = None
    digits: int = 3
    each: bool = False
    comparable: Reader = ""  # "" = comparable, else why not (a reader: from the table)


@dataclass(frozen=True)
class Spec:
    """A section's headline: its lines, the label of the source column, and the figure (the
    first section figure whose path contains one of ``figure``; ``no_figure_caption`` when
    the section has none and the report draws the rows)."""

    lines: tuple[Line, ...]
    source_label: str = "source"
    figure: tuple[str, ...] = ()
    no_figure_caption: str = ""
    doc: str = field(default="", compare=False)


def _get(reader: Reader, s: Sel) -> Any:
    v = reader(s) if callable(reader) else reader
    return v.item() if hasattr(v, "item") and not isinstance(v, str | dict) else v


def _select(line: Line, table: pd.DataFrame) -> pd.DataFrame:
    if callable(line.where):
        return line.where(table)
    out = table
    for col, val in (line.where or {}).items():
        out = out[out[col].astype(str) == str(val)]
    return out


def _one(line: Line, s: Sel) -> dict[str, Any]:
    quantity = line.label(s) if line.label else line.quantity
    return row(
        quantity,
        _get(line.source, s),
        _get(line.ours, s),
        str(_get(line.note, s) or ""),
        digits=line.digits,
        tol=_get(line.tol, s),
        cause=str(_get(line.cause, s) or ""),
        not_comparable=_text(_get(line.comparable, s)),
    )


def _text(v: Any) -> str:
    """A table cell as text; NaN / None / empty → ""."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def _unread(line: Line, note: str, missing: str) -> dict[str, Any]:
    """The row of a line whose value could not be read: the source if it is a constant."""
    src = None if callable(line.source) else line.source
    return row(line.quantity, src, None, note, digits=line.digits, missing=missing)


def rows_of(line: Line, tables: list[dict], cache: dict[str, pd.DataFrame]) -> list[dict]:
    """The headline row(s) of one line, read from the section's tables."""
    keys = (line.table,) if isinstance(line.table, str) else line.table
    path = next((p for k in keys if (p := opt_tab(tables, k)) is not None), None)
    static_note = "" if callable(line.note) else line.note
    if path is None:
        return [_unread(line, NOT_RUN, NOT_RUN)]
    try:
        if path not in cache:
            cache[path] = read_frame(path)
        table = cache[path]
        frame = _select(line, table)
        if line.each:
            out = []
            for i in range(len(frame)):
                one = frame.iloc[[i]]
                out.append(_one(line, Sel(path, table, one, one.iloc[0])))
            if not out:
                return [_unread(line, f"{NOT_RUN} (no such rows in {path})", NOT_RUN)]
            return out
        picked = frame.iloc[-1] if line.pick == "last" else frame.iloc[0]
        return [_one(line, Sel(path, table, frame, picked))]
    except _READ_ERRORS as err:
        log.warning("headline %r: %s", line.quantity, err)
        why = f"not read: {type(err).__name__} {err}"
        note = f"{static_note} ({why})" if static_note else why
        return [_unread(line, note, why)]


def _first(figures: list[dict], *keys: str) -> str | None:
    for k in keys:
        for f in figures:
            if k in str(f.get("path", "")):
                return str(f["path"])
    return str(figures[0]["path"]) if figures else None


def _caption(figures: list[dict], path: str | None) -> str:
    for f in figures:
        if str(f.get("path")) == path:
            r = f.get("reproduces")
            first = re.split(r"(?<=\.)\s", f.get("caption", ""), maxsplit=1)[0]
            return (f"{r}. " if r else "") + first
    return ""


def build(spec: Spec, tables: list[dict], figures: list[dict] | None = None) -> dict:
    """The headline of a section from its declared lines (one mechanism for every section)."""
    figures = figures or []
    cache: dict[str, pd.DataFrame] = {}
    rows = [r for line in spec.lines for r in rows_of(line, tables, cache)]
    fig = _first(figures, *spec.figure) if spec.figure or figures else None
    caption = _caption(figures, fig) if fig else spec.no_figure_caption
    return headline(rows, figure=fig, figure_caption=caption, source_label=spec.source_label)


@dataclass(frozen=True)
class StageSection:
    """A stage's report section: its id, title, place in the report (``order``) and headline
    spec. :meth:`write` is the one tail of every stage's section builder."""

    id: str
    title: str
    order: int
    headline: Spec

    def write(
        self,
        path: str | Path,
        *,
        text: list[str],
        figures: list[dict] | None = None,
        tables: list[dict] | None = None,
    ) -> Section:
        """Build the headline from the section's own tables and figures and write the JSON."""
        figures, tables = list(figures or []), list(tables or [])
        section = Section(
            id=self.id,
            title=self.title,
            order=self.order,
            text=list(text),
            figures=figures,
            tables=tables,
            headline=build(self.headline, tables, figures),
        )
        write_section(path, section)
        return section


# ------------------------------------------------------------------------------ small readers
def starts(column: str, prefix: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``where``: the rows whose ``column`` starts with ``prefix``."""
    return lambda t: t[t[column].astype(str).str.startswith(prefix)]


def containing(*patterns: str, column: str = "quantity") -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``where``: the rows whose ``column`` contains every pattern."""

    def where(t: pd.DataFrame) -> pd.DataFrame:
        for p in patterns:
            t = t[t[column].astype(str).str.contains(p, regex=False)]
        return t

    return where


def first_col(value: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``where``: the rows whose first column equals ``value``."""
    return lambda t: t[t.iloc[:, 0] == value]
