"""Assemble section manifests into a static, self-contained HTML page."""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..io import read_json, write_json, write_text
from .headline import render_headline


@dataclass
class Section:
    """One report section. Paths are relative to the workflow's working directory.

    ``figures``: dicts with ``path``, ``caption`` and optional
    ``reproduces`` (e.g. "seed 001 Fig. 4.5").
    ``tables``: dicts with ``path`` (tsv/csv/parquet), ``caption``, optional ``max_rows``.
    ``text``: paragraphs (plain text, HTML-escaped); the first is shown under the headline, the
    rest in a collapsible block.
    ``headline``: :func:`fedclust.report.headline.headline` (figure, "source | ours |
    difference" rows, one sentence), shown first.
    """

    id: str
    title: str
    order: int = 50
    text: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    headline: dict[str, Any] | None = None


def write_section(path: str | os.PathLike, section: Section) -> None:
    write_json(path, asdict(section))


def by_name(paths: Iterable[str | os.PathLike], parts: int = 1) -> dict[str, str]:
    """Files keyed by their name: the last ``parts`` path components without the suffix
    (``results/survival/OS/table_8_1.tsv`` -> ``OS/table_8_1`` with ``parts=2``), so a report
    finds a rule's outputs by name, never by their order in the rule's list."""
    out: dict[str, str] = {}
    for p in paths:
        path = Path(p)
        key = "/".join([*path.parent.parts[len(path.parent.parts) - parts + 1 :], path.stem])
        if key in out:
            raise ValueError(f"two files named {key!r}: {out[key]} and {p}")
        out[key] = str(p)
    return out


def _img(path: Path) -> str:
    mime = {"png": "image/png", "svg": "image/svg+xml", "jpg": "image/jpeg"}[path.suffix[1:]]
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:{mime};base64,{data}" alt="{html.escape(path.name)}">'


def _chart(h: dict[str, Any]) -> str | None:
    """A headline without a figure: bars of the numeric 'ours' values (source as a tick)."""
    import io

    import matplotlib.pyplot as plt

    from .headline import as_number, resolve

    rows = [r for r in resolve(h).get("rows", []) if as_number(r.get("ours")) is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1))
    y = range(len(rows))
    ax.barh(list(y), [as_number(r["ours"]) for r in rows], color="#4a7ab0", label="ours")
    src = [(i, as_number(r.get("source"))) for i, r in enumerate(rows)]
    src = [(i, v) for i, v in src if v is not None]
    if src:
        ax.plot([v for _, v in src], [i for i, _ in src], "k|", ms=14, label="source")
    ax.set_yticks(list(y), [str(r["quantity"])[:60] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img src="data:image/png;base64,{data}" alt="headline chart">'


def _read_any(path: Path) -> pd.DataFrame:
    from ..io import read_table

    if path.suffix == ".parquet":
        return read_table(path)
    try:
        return pd.read_csv(path, sep="\t" if ".tsv" in path.name else ",")
    except pd.errors.EmptyDataError:  # a step that did not run (e.g. an optional extra) wrote
        return pd.DataFrame()  # an empty table: shown as "0 rows", not a failed report


def _table(path: Path, max_rows: int, df: pd.DataFrame | None = None) -> str:
    df = _read_any(path) if df is None else df
    more = f"<p class=note>first {max_rows} of {len(df)} rows</p>" if len(df) > max_rows else ""
    return (
        df.head(max_rows).to_html(
            index=False, float_format=lambda v: f"{v:.4g}", classes="tbl", border=0
        )
        + more
    )


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9'\"(‘“])")
SHARED_MIN_CHARS = 60  # shorter repeated sentences ("Thesis beside.") stay in their caption


def sentences(text: str) -> list[str]:
    """Split a caption into sentences (at '. ' before a capital, digit, quote or bracket)."""
    return [t for t in (x.strip() for x in _SENTENCE.split(text or "")) if t]


def shared_captions(captions: list[str]) -> tuple[list[str], list[str]]:
    """Sentences of ≥ SHARED_MIN_CHARS that occur in two or more captions (and open none):
    said once.

    Returns (the captions without them, the shared sentences in first-seen order)."""
    split = [sentences(c) for c in captions]
    count: dict[str, int] = {}
    for parts in split:
        for t in dict.fromkeys(parts):
            count[t] = count.get(t, 0) + 1
    firsts = {parts[0] for parts in split if parts}  # a caption keeps its own first sentence
    shared = [
        t for t, n in count.items() if n >= 2 and len(t) >= SHARED_MIN_CHARS and t not in firsts
    ]
    out = [" ".join(t for t in parts if t not in shared) for parts in split]
    return out, shared


def _summary(caption: str, n_rows: int | None) -> str:
    first = sentences(caption)[0] if caption else "table"
    if len(first) > 160:
        first = first[:157].rstrip() + "…"
    rows = "" if n_rows is None else f" <span class=note>({n_rows} rows)</span>"
    return f"{html.escape(first)}{rows}"


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #345}h2{margin-top:2.5em;border-bottom:1px solid #ccc}
figure{margin:1.5em 0}figure img{max-width:100%;max-height:900px}
figcaption{font-size:.9em;color:#444}
.tbl{border-collapse:collapse;font-size:.85em}
.tbl td,.tbl th{padding:2px 8px;border-bottom:1px solid #ddd}
.note{font-size:.85em;color:#666}.repro{font-weight:600;color:#345}nav li{margin:.2em 0}
.headline{background:#f5f8fb;border:1px solid #c9d6e3;border-radius:6px;padding:.8em 1em}
.hlfig{margin:0 0 .8em}.hlfig img{max-height:560px}
.hltbl{font-size:.9em;margin:.4em 0}.hltbl th{text-align:left;background:#e6edf4}
.hltbl tr.miss td{background:#fff1e6}.hltbl tr.match td{background:#eef8ee}
.hltbl tr.missing td{color:#888;font-style:italic}
.verdict{font-weight:500;margin:.6em 0 0}
details{margin:.5em 0;border-left:3px solid #ddd;padding-left:.6em;overflow-x:auto}
summary{cursor:pointer;font-weight:500}.shared{background:#fafafa;padding:.4em .8em}
.nohl{color:#a33}
"""


def _render_section(s: Section) -> str:
    parts = [f'<section class=report-section id="{html.escape(s.id)}">']
    parts.append(f"<h2>{html.escape(s.title)}</h2>")
    hl_fig = (s.headline or {}).get("figure")
    if s.headline:
        img = _img(Path(hl_fig)) if hl_fig else _chart(s.headline)
        parts.append(render_headline(s.headline, img))
    else:
        parts.append("<p class='note nohl'>No headline for this section.</p>")
    if s.text:
        parts.append(f"<p>{html.escape(s.text[0])}</p>")
    if len(s.text) > 1:
        parts.append(
            f"<details><summary>Method, data and deviations ({len(s.text) - 1} more "
            "paragraphs)</summary>"
            + "".join(f"<p>{html.escape(p)}</p>" for p in s.text[1:])
            + "</details>"
        )
    figures = [f for f in s.figures if f.get("path") != hl_fig]
    caps, shared = shared_captions(
        [f.get("caption", "") for f in figures] + [t.get("caption", "") for t in s.tables]
    )
    fig_caps, tab_caps = caps[: len(figures)], caps[len(figures) :]
    if shared:
        parts.append(
            "<div class='note shared'><b>Said once for the figures and tables below:</b> "
            + " ".join(html.escape(t) for t in shared)
            + "</div>"
        )
    for f, c in zip(figures, fig_caps, strict=True):
        repro = f.get("reproduces")
        cap = (f"<span class=repro>{html.escape(repro)}.</span> " if repro else "") + html.escape(c)
        parts.append(f"<figure>{_img(Path(f['path']))}<figcaption>{cap}</figcaption></figure>")
    if s.tables:
        parts.append(f"<h3>Tables ({len(s.tables)})</h3>")
    for t, c in zip(s.tables, tab_caps, strict=True):
        path = Path(t["path"])
        df = _read_any(path)
        first, *more = sentences(c) or [""]
        rest = c if len(first) > 160 else " ".join(more)
        parts.append(
            f"<details class=tbl-block><summary>{_summary(c, len(df))}</summary>"
            + (f"<p class=note>{html.escape(rest)}</p>" if rest else "")
            + _table(path, int(t.get("max_rows", 60)), df)
            + "</details>"
        )
    parts.append("</section>")
    return "".join(parts)


def build_report(
    section_files: list[str | os.PathLike],
    out_html: str | os.PathLike,
    title: str = "fedclust report",
    preamble: list[str] | None = None,
) -> None:
    """Render all sections (sorted by ``order``) into ``out_html``; missing files fail loudly.

    Each section: headline (figure, source | ours | difference table, sentence), first text
    paragraph, the rest of the text collapsed, caption sentences shared by several figures or
    tables said once, figures, then every table in a collapsible block."""
    sections = [Section(**read_json(p)) for p in section_files]
    sections.sort(key=lambda s: (s.order, s.id))
    body = [f"<h1>{html.escape(title)}</h1>"]
    body += [f"<p>{html.escape(p)}</p>" for p in preamble or []]
    body.append(
        "<nav><ol>"
        + "".join(f'<li><a href="#{s.id}">{html.escape(s.title)}</a></li>' for s in sections)
        + "</ol></nav>"
    )
    body += [_render_section(s) for s in sections]
    page = (
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )
    write_text(out_html, page)
