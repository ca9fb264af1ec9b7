"""Issue 15: the Performance section's benchmark (ratios to pooled, floats per center)."""

from __future__ import annotations

import numpy as np

from fedclust.hac.toy import cohort_like
from fedclust.perf.hac import METHODS, hac_benchmark
from fedclust.perf.machine import machine


def test_hac_benchmark_rows_and_floats_per_center():
    t = hac_benchmark(
        3,
        n=80,
        genes=150,
        linkage_method="average",
        n_min_fraction=0.1,
        sketch=20,
        gene_objects=30,
        repeat=1,
    ).set_index("method")
    assert list(t.index) == list(METHODS)
    assert (t["seconds"] > 0).all() and (t["pooled_seconds"] > 0).all()
    np.testing.assert_allclose(t["ratio"], t["seconds"] / t["pooled_seconds"])
    _, c = cohort_like(3, 80, 150)
    sizes = np.bincount(c)
    # one-shot methods: a center sends its sketch (n_c × k) / perturbed rows (n_c × d)
    assert t.loc["projection", "floats_per_center_max"] == sizes.max() * 20
    assert t.loc["projection", "floats_per_center_mean"] == sizes[sizes > 0].mean() * 20
    assert t.loc["perturbation", "floats_per_center_max"] == sizes.max() * 150
    assert t.loc["projection", "center_madds_max"] == sizes.max() * 150 * 20
    assert t.loc["gradual", "rounds"] > 1 and t.loc["projection", "rounds"] == 1
    info = machine()
    assert info["cpu_count"] >= 1 and "omp_num_threads" in info


def test_privacy_rows_keep_times_out_of_the_text_the_section_copies():
    """Issue 30 item 7: the `objects` text goes into the perf section JSON (byte-identical across
    runs); the key set-up time once sat in it ("key set-up 0.00 s": 0.01 s on a loaded machine
    made two runs' sections differ). Times live in their columns of the benchmark table."""
    import re

    from fedclust.perf.privacy import privacy_benchmark

    rows = privacy_benchmark(0, n=64, centres=2, rounds=1)
    assert [r["method"] for r in rows][0] == "secure aggregation"
    assert rows[0]["setup_seconds"] >= 0 and rows[0]["seconds"] > 0
    for r in rows:
        assert not re.search(r"\d\s*s\b", r["objects"]), r["objects"]
