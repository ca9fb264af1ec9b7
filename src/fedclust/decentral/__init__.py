"""Federated vs decentralised learning on the heart-disease hospitals (seed 004).

Modules: :mod:`.model` (the thesis' network, Keras semantics), :mod:`.training` (local fit /
evaluate), :mod:`.aggregation` (weighted averaging, Flower-shaped strategy), :mod:`.topologies`
(who sends to whom, both modes), :mod:`.divergence` (spec §5), :mod:`.clients` (client data and
the Flower-shaped client), :mod:`.simulate` (the round loops), :mod:`.batched` (lockstep training
of several runs), :mod:`.centralized` (baseline), :mod:`.published` (the thesis' numbers) and
:mod:`.tables` (Tables 4.1–4.4, Figs 4.1–4.3).
"""
