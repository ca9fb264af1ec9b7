"""Every report section of the workflow and the stage module that builds it (top layer: it
names the stages; the report engine, :mod:`fedclust.report`, names none).

A stage's ``report.py`` declares its section builder and its headline :class:`~fedclust.report.
headlines.Spec` as ``HEADLINE``; adding a stage adds one line here (and a thesis-shaped case to
``tests/test_report_headlines_thesis.py``, which checks that every section listed here has one).
"""

from __future__ import annotations

import importlib

from .report.headlines import Spec

#: section id -> the module that writes it and declares its ``HEADLINE``
REPORT_MODULES: dict[str, str] = {
    "data": "fedclust.data.report",
    "hac": "fedclust.hac.report",
    "attacks": "fedclust.attacks.report",
    "dec": "fedclust.dec.report",
    "dec_figures": "fedclust.dec.figures_report",
    "dec_d62": "fedclust.dec.d62.report",
    "decentral": "fedclust.decentral.report",
    "fedcref": "fedclust.fedcref.report",
    "survival": "fedclust.survival.report",
    "admm": "fedclust.admm.report",
    "perf": "fedclust.perf.report",
    "bayes": "fedclust.bayes.report",
    "generative": "fedclust.generative.report",
    "boosting": "fedclust.boosting.report",
    "privacy": "fedclust.privacy.report",
    "privacy_utility": "fedclust.privacy_utility.report",
}


def headline_specs() -> dict[str, Spec]:
    """Section id -> its declared headline (imports each stage's report module)."""
    return {k: importlib.import_module(m).HEADLINE for k, m in REPORT_MODULES.items()}
