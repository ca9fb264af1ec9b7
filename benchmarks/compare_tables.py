"""Compare the result tables of two workflow runs cell for cell (issue 14).

    python benchmarks/compare_tables.py BEFORE/results AFTER/results [--only hac/] [-q]

Every ``.tsv``/``.tsv.gz``/``.csv``/``.parquet``/``.json`` under ``results/`` (benchmark files,
logs and timing columns such as ``seconds``, ``wall_s``, ``cpu_time`` ignored) is reported as
identical, differing (cells, max abs diff, first differing cells) or present in one run only.
Exit code 1 when a table present in both runs differs (``--strict``: also a table in one run
only). The library is :mod:`fedclust.report.compare`; this script finds it in this checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.report.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
