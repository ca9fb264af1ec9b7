"""Federated gradient tree boosting (seed 003 §9 = GenoMed4All D6.2 chapter 10; issue 26).

* :mod:`.tree` — boosted trees on binned features with XGBoost's (hist) arithmetic; the one
  depth-wise growth loop;
* :mod:`.grid` — the shared candidate grid (federated moments + merged lattice sketch);
* :mod:`.protocols` — every message, as declared ledger protocols;
* :mod:`.centre` / :mod:`.server` — the histogram protocol, D6.2's top-S vote (unreported = 0,
  or a union round), Flower-style bagging and cyclic training;
* :mod:`.pooled` — ``xgboost.train`` on the pooled binned rows and the tree comparison;
* :mod:`.data` / :mod:`.experiment` — datasets, centres, one (dataset, split, scheme, rep) unit;
* :mod:`.workflow` (parse time) / :mod:`.report` — the rule file's helpers, tables and figure.

The package imports nothing heavy: ``rules/boosting.smk`` reads :mod:`.workflow` at parse time.
"""
