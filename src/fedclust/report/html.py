"""Assemble section manifests into a static, self-contained HTML page."""

from __future__ import annotations

import base64
import html
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..io import read_json, write_json, write_text


@dataclass
class Section:
    """One report section. Paths are relative to the workflow's working directory.

    ``figures``: dicts with ``path``, ``caption`` and optional
    ``reproduces`` (e.g. "seed 001 Fig. 4.5").
    ``tables``: dicts with ``path`` (tsv/csv/parquet), ``caption``, optional ``max_rows``.
    ``text``: paragraphs (plain text, HTML-escaped) shown before the figures.
    """

    id: str
    title: str
    order: int = 50
    text: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)


def write_section(path: str | os.PathLike, section: Section) -> None:
    write_json(path, asdict(section))


def _img(path: Path) -> str:
    mime = {"png": "image/png", "svg": "image/svg+xml", "jpg": "image/jpeg"}[path.suffix[1:]]
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:{mime};base64,{data}" alt="{html.escape(path.name)}">'


def _table(path: Path, max_rows: int) -> str:
    from ..io import read_table

    df = (
        read_table(path)
        if path.suffix == ".parquet"
        else (pd.read_csv(path, sep="\t" if ".tsv" in path.name else ","))
    )
    more = f"<p class=note>first {max_rows} of {len(df)} rows</p>" if len(df) > max_rows else ""
    return (
        df.head(max_rows).to_html(
            index=False, float_format=lambda v: f"{v:.4g}", classes="tbl", border=0
        )
        + more
    )


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #345}h2{margin-top:2em;border-bottom:1px solid #ccc}
figure{margin:1.5em 0}figure img{max-width:100%}figcaption{font-size:.9em;color:#444}
.tbl{border-collapse:collapse;font-size:.85em}
.tbl td,.tbl th{padding:2px 8px;border-bottom:1px solid #ddd}
.note{font-size:.85em;color:#666}.repro{font-weight:600;color:#345}nav li{margin:.2em 0}
"""


def build_report(
    section_files: list[str | os.PathLike],
    out_html: str | os.PathLike,
    title: str = "fedclust report",
    preamble: list[str] | None = None,
) -> None:
    """Render all sections (sorted by ``order``) into ``out_html``; missing files fail loudly."""
    sections = [Section(**read_json(p)) for p in section_files]
    sections.sort(key=lambda s: (s.order, s.id))
    body = [f"<h1>{html.escape(title)}</h1>"]
    body += [f"<p>{html.escape(p)}</p>" for p in preamble or []]
    body.append(
        "<nav><ol>"
        + "".join(f'<li><a href="#{s.id}">{html.escape(s.title)}</a></li>' for s in sections)
        + "</ol></nav>"
    )
    for s in sections:
        body.append(f'<h2 id="{s.id}">{html.escape(s.title)}</h2>')
        body += [f"<p>{html.escape(p)}</p>" for p in s.text]
        for t in s.tables:
            body.append(f"<h3>{html.escape(t['caption'])}</h3>")
            body.append(_table(Path(t["path"]), int(t.get("max_rows", 60))))
        for f in s.figures:
            repro = f.get("reproduces")
            cap = (
                f"<span class=repro>{html.escape(repro)}.</span> " if repro else ""
            ) + html.escape(f["caption"])
            body.append(f"<figure>{_img(Path(f['path']))}<figcaption>{cap}</figcaption></figure>")
    page = (
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )
    write_text(out_html, page)
