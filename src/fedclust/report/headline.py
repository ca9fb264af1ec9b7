"""Section headlines: one figure, a short "source value | ours | difference" table, one sentence.

Every stage's report script fills ``Section.headline`` with :func:`headline` (rows made by
:func:`row`); the report renders it at the top of the section (:func:`render_headline`).

A source value is a number, or a string the thesis printed: a bound (``"> 0.95"``, ``"≤ 0.1"``),
an approximate value (``"≈ 0.5"``), a range (``"0.3–0.6"``), ``"0.75 ± 0.02"``, or anything else
(``"O(n)"``, ``"not reported"``: no difference). The difference is always ``ours − source`` (for a
bound or range: to the nearest admissible value, 0 inside); missing values are shown as such,
never as 0.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

MISSING_SOURCE = "not reported"
MISSING_OURS = "not in this run"

_NUM = r"[-+−]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BOUND = re.compile(rf"^\s*(>=|<=|>|<|≥|≤|≈|~)\s*({_NUM})\s*(%?)\s*$")
_RANGE = re.compile(rf"^\s*({_NUM})\s*(?:–|-|—|to)\s*({_NUM})\s*(%?)\s*$")
_PM = re.compile(rf"^\s*({_NUM})\s*(?:±|\+/-)\s*({_NUM})\s*$")
_PLAIN = re.compile(rf"^\s*({_NUM})\s*(%?)\s*$")


def _num(text: str) -> float:
    return float(text.replace("−", "-"))


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and not v.strip()


def as_number(v: Any) -> float | None:
    """A plain number (int/float/numpy scalar or a numeric string), else None."""
    if _is_missing(v) or isinstance(v, bool):
        return None
    if isinstance(v, str):
        m = _PLAIN.match(v)
        return _num(m.group(1)) if m else None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class Difference:
    """``value`` = ours − source (None when either is missing or the source is not numeric);
    ``status`` = "", "meets", "misses", "inside", "below", "above" for bounds and ranges."""

    value: float | None
    status: str = ""
    reason: str = ""


def difference(source: Any, ours: Any) -> Difference:
    """ours − source; for a bound or range the signed distance to it (0 when satisfied)."""
    if _is_missing(source):
        return Difference(None, reason="no source value")
    o = as_number(ours)
    if o is None:
        return Difference(None, reason="no value of ours" if _is_missing(ours) else "not a number")
    s = as_number(source)
    if s is not None:
        return Difference(o - s)
    if not isinstance(source, str):
        return Difference(None, reason="source not a number")
    if m := _BOUND.match(source):
        op, x = m.group(1), _num(m.group(2))
        if op in ("≈", "~"):
            return Difference(o - x)
        if op in (">", ">=", "≥"):
            ok = o > x if op == ">" else o >= x
        else:
            ok = o < x if op == "<" else o <= x
        return Difference(0.0 if ok else o - x, "meets" if ok else "misses")
    if m := _RANGE.match(source):
        lo, hi = sorted((_num(m.group(1)), _num(m.group(2))))
        if o < lo:
            return Difference(o - lo, "below")
        if o > hi:
            return Difference(o - hi, "above")
        return Difference(0.0, "inside")
    if m := _PM.match(source):
        return Difference(o - _num(m.group(1)))
    return Difference(None, reason="source not a number")


def row(
    quantity: str,
    source: Any,
    ours: Any,
    note: str = "",
    digits: int = 3,
    tol: float | None = None,
    cause: str = "",
    missing: str = "",
    not_comparable: str = "",
) -> dict[str, Any]:
    """One headline row; numbers become plain floats (JSON), NaN/None stay missing (None).

    ``tol``: |difference| up to which ours counts as matching (default: 5 % of |source|, or
    1e-9 when the source is 0); bounds and ranges match when met. ``cause``: the documented
    reason why ours may differ from the source (quoted by :func:`sentence_for` when the row
    differs); ``missing``: why ours is missing (e.g. "not run in this config");
    ``not_comparable``: why ours, though present, is no measurement of the source's quantity
    (other data or network size): the row is shown but never compared, never a match."""

    def clean(v: Any) -> Any:
        if _is_missing(v):
            return None
        if isinstance(v, str | bool):
            return v
        x = as_number(v)
        return v if x is None else (int(x) if isinstance(v, int) else x)

    out = {
        "quantity": quantity,
        "source": clean(source),
        "ours": clean(ours),
        "note": note,
        "digits": int(digits),
        "tol": None if tol is None else float(tol),
        "cause": str(cause or ""),
    }
    if missing:
        out["missing"] = str(missing)
    if not_comparable:
        out["not_comparable"] = str(not_comparable)
    return out


def verdict(r: dict[str, Any]) -> str:
    """'match', 'differs' or 'not compared' (a value missing, the source not a number, or the
    row marked not comparable)."""
    if r.get("not_comparable"):
        return "not compared"
    d = difference(r.get("source"), r.get("ours"))
    if d.value is None:
        return "not compared"
    if d.status:
        return "match" if d.status in ("meets", "inside") else "differs"
    tol = r.get("tol")
    if tol is None:
        src = as_number(r.get("source"))
        if src is None:  # "≈ x" or "x ± s"
            m = _BOUND.match(str(r.get("source"))) or _PM.match(str(r.get("source")))
            src = _num(m.group(2) if m and m.re is _BOUND else m.group(1)) if m else 0.0
        tol = 0.05 * abs(src) if src else 1e-9
    return "match" if abs(d.value) <= tol else "differs"


UNDOCUMENTED = "cause not documented"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _by_reason(rows: list[tuple[str, str]]) -> str:
    """ "a and b (reason 1), c (reason 2)": names grouped by their reason, first-seen order
    (more than four names sharing a reason: their count)."""
    groups: dict[str, list[str]] = {}
    for name, reason in rows:
        groups.setdefault(reason, []).append(name)
    if len(groups) == 1 and len(rows) > 4:  # "5 not compared (reason)"
        return f"({next(iter(groups))})"
    return ", ".join(
        f"{_names(names) if len(names) <= 4 else f'{len(names)} rows'} ({reason})"
        for reason, names in groups.items()
    )


def _not_compared_reason(r: dict[str, Any]) -> str:
    if r.get("not_comparable"):
        return f"not comparable: {r['not_comparable']}"
    if r.get("missing"):
        return str(r["missing"])
    d = difference(r.get("source"), r.get("ours"))
    if d.reason == "source not a number" and r.get("cause"):
        return str(r["cause"])
    return d.reason or UNDOCUMENTED


def sentence_for(rows: list[dict[str, Any]], why: str = "") -> str:
    """One sentence derived from the rows alone: which rows match the source (within each row's
    tolerance), which differ and each differing row's documented ``cause``, and which are not
    compared and why, e.g. "3 of 5 rows match the source (a; b; c); 2 differ: d (cause of d),
    e (cause of e)." ``why`` (optional) is appended as it is."""
    match: list[str] = []
    differs: list[tuple[str, str]] = []
    other: list[tuple[str, str]] = []
    for r in rows:
        v, name = verdict(r), str(r["quantity"])
        if v == "match":
            match.append(name)
        elif v == "differs":
            differs.append((name, str(r.get("cause") or UNDOCUMENTED)))
        else:
            other.append((name, _not_compared_reason(r)))
    n = len(rows)
    parts = []
    if match:
        k = len(match)
        named = f" ({'; '.join(match)})" if k <= 4 else ""
        parts.append(
            f"all {n} rows match the source"
            if k == n
            else f"{k} of {n} rows match the source{named}"
        )
    if differs:
        k = len(differs)
        lead = f"{k} differ" if match else f"{k} of {n} rows differ from the source"
        text = _by_reason(differs)
        parts.append(f"{lead}{' ' if text.startswith('(') else ': '}{text}")
    if other:
        text = _by_reason(other)
        parts.append(f"{len(other)} not compared{' ' if text.startswith('(') else ': '}{text}")
    text = "; ".join(parts) or "no rows"
    text = text[0].upper() + text[1:] + "."
    return f"{text} {why}".strip() if why else text


def ref(table: str, column: str, where: dict[str, Any] | None = None) -> dict[str, Any]:
    """A value read from ``table`` when the report is rendered (first row matching ``where``).

    For numbers that must not enter the section JSON, e.g. timings, which live under
    results/benchmarks/ so that result files stay byte-identical between runs."""
    return {"table": str(table), "column": column, "where": dict(where or {})}


def _is_ref(v: Any) -> bool:
    return isinstance(v, dict) and "table" in v and "column" in v


def _lookup(r: dict[str, Any]) -> Any:
    import pandas as pd

    path = str(r["table"])
    try:
        df = pd.read_csv(path, sep="\t" if ".tsv" in path else ",")
        for col, val in r["where"].items():
            df = df[df[col].astype(str) == str(val)]
        return df[r["column"]].iloc[0]
    except (OSError, KeyError, IndexError, ValueError):
        return None


def resolve(h: dict[str, Any]) -> dict[str, Any]:
    """The headline with every :func:`ref` value read from its table; the sentence recomputed
    when a value was a reference."""
    rows, changed = [], False
    for r in h.get("rows", []):
        r = dict(r)
        for key in ("source", "ours"):
            if _is_ref(r.get(key)):
                r[key], changed = row("", _lookup(r[key]), None)["source"], True
        rows.append(r)
    out = {**h, "rows": rows}
    if changed and h.get("why") is not None:
        out["sentence"] = sentence_for(rows, h["why"] or "")
    return out


def headline(
    rows: list[dict[str, Any]],
    why: str = "",
    figure: str | None = None,
    figure_caption: str = "",
    source_label: str = "source",
    sentence: str | None = None,
) -> dict[str, Any]:
    """The ``headline`` entry of a section: rows (:func:`row`), one sentence on what matches,
    what does not and why (derived from the rows' verdicts and causes, :func:`sentence_for`;
    ``why``, if given, is appended, so it must not claim a match), and one figure (a path;
    usually one of the section's figures; None: the report draws the rows)."""
    rows = list(rows)
    return {
        "rows": rows,
        "sentence": sentence_for(rows, why) if sentence is None else sentence,
        "why": why if sentence is None else None,
        "figure": None if figure is None else str(figure),
        "figure_caption": figure_caption,
        "source_label": source_label,
    }


def fmt(v: Any, digits: int = 3) -> str:
    """Format a value: numbers with ``digits`` significant digits, strings as given."""
    if isinstance(v, bool):
        return str(v)
    x = as_number(v) if not isinstance(v, str) else None
    if x is None:
        return str(v)
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.{digits}g}"


def difference_text(source: Any, ours: Any, digits: int = 3) -> str:
    """The difference cell: '+0.012', '0 (meets > 0.95)', '−0.4 (misses ≥ 0.9)', '— (reason)'."""
    d = difference(source, ours)
    if d.value is None:
        return f"— ({d.reason})"
    v = 0.0 if d.value == 0 else d.value
    if float(v).is_integer() and abs(v) < 1e7:
        text = f"{int(v):+d}" if v else "0"
    else:
        text = f"{v:+.{digits}g}"
    text = text.replace("-", "−")
    return f"{text} ({d.status} {source})" if d.status else text


def table_rows(h: dict[str, Any]) -> list[dict[str, str]]:
    """The rows as the report shows them (strings): quantity, source, ours, difference, note."""
    out = []
    for r in resolve(h).get("rows", []):
        digits = int(r.get("digits", 3))
        src, ours = r.get("source"), r.get("ours")
        out.append(
            {
                "quantity": str(r["quantity"]),
                "source": MISSING_SOURCE if _is_missing(src) else fmt(src, digits),
                "ours": MISSING_OURS if _is_missing(ours) else fmt(ours, digits),
                "difference": "— (not comparable)"
                if r.get("not_comparable")
                else difference_text(src, ours, min(digits, 3)),
                "verdict": verdict(r),
                "note": str(r.get("note", "")),
            }
        )
    return out


def render_headline(h: dict[str, Any], img_html: str | None) -> str:
    """HTML of a headline: the figure (already rendered ``<img>``), the table, the sentence."""
    label = html.escape(str(h.get("source_label") or "source"))
    head = (
        f"<tr><th>quantity</th><th>{label}</th><th>ours</th><th>difference</th><th>note</th></tr>"
    )
    body = []
    for r in table_rows(h):
        cls = ""
        if r["source"] == MISSING_SOURCE or r["ours"] == MISSING_OURS:
            cls = " class=missing"
        elif r["verdict"] == "differs":
            cls = " class=miss"
        elif r["verdict"] == "match":
            cls = " class=match"
        cells = "".join(
            f"<td>{html.escape(r[k])}</td>"
            for k in ("quantity", "source", "ours", "difference", "note")
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    fig = ""
    if img_html:
        cap = html.escape(h.get("figure_caption") or "")
        fig = f"<figure class=hlfig>{img_html}<figcaption>{cap}</figcaption></figure>"
    sentence = html.escape(resolve(h).get("sentence") or "")
    return (
        f"<div class=headline>{fig}"
        f"<table class='tbl hltbl'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"
        f"<p class=verdict>{sentence}</p></div>"
    )
