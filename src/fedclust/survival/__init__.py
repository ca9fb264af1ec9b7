"""Federated survival analysis (seed 003 §7 = GenoMed4All D6.2 chapter 8).

* :mod:`.cox` — Breslow Cox partial likelihood with a per-centre (block-diagonal) risk-set mask,
  Harrell's C-index, input checks;
* :mod:`.model` — DeepCox MLP (p → 8 → 4 → 1), L1 + L2 on the first layer;
* :mod:`.train` — local training with the D6.2 learning-rate rule, centralized training;
* :mod:`.strategies` — Sequential, Weights Averaging (FedAvg), Ensemble, isolated centres;
* :mod:`.scenarios` — 75/25 split and the four centre scenarios;
* :mod:`.cohort` — the IPSS-M survival cohort (clinical + binary covariates) or its simulated
  stand-in, imputation and min-max scaling fitted on the training part;
* :mod:`.experiment` — leave-one-centre-out CV scored at the centres, one (scenario, strategy,
  repetition) job;
* :mod:`.coxph` / :mod:`.km` — the federated references: stratified Cox-PH by Newton steps from
  per-centre sums (exact), Kaplan–Meier and log-rank from per-centre counts on a public grid.
"""
