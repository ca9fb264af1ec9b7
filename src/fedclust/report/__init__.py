"""Report sections and the static HTML report.

Each workflow stage writes one *section* file (JSON) naming its figures and tables with captions
and a headline (``headline.headline``: one figure, a "source | ours | difference" table, one
sentence); the report rule turns all sections into one self-contained ``index.html``.
"""

from .headline import headline, row
from .headlines import Spec, StageSection, build
from .html import Section, build_report, by_name, write_section

__all__ = [
    "Section",
    "Spec",
    "StageSection",
    "build",
    "build_report",
    "by_name",
    "headline",
    "row",
    "write_section",
]
