"""The machine a benchmark ran on: processor, CPU count, BLAS/OpenMP threads, versions."""

from __future__ import annotations

import os
import platform

import numpy as np


def machine() -> dict:
    """Processor, CPU count and the BLAS/OpenMP thread setting of this run."""
    try:
        from threadpoolctl import threadpool_info

        blas = max((i.get("num_threads", 1) for i in threadpool_info()), default=1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        blas = None
    return {
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "unset"),
        "blas_threads": blas,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
