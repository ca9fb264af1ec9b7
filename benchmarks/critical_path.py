"""Job count, jobs per rule, critical path and total job-minutes of a config's DAG (issue 14).

    python benchmarks/critical_path.py --configfile config/thesis.yaml [--profile profiles/slurm]

Thin wrapper of ``python -m fedclust.perf.critical_path`` (docs/RESOURCES.md, "Critical path").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedclust.perf.critical_path import main

if __name__ == "__main__":
    raise SystemExit(main())
