"""Attacks on what federated centers share under random/orthogonal projections (seed 001 §8).

* :mod:`.known_io` — known input-output attack on orthogonal projections (thesis eq. 3.1–3.2).
* :mod:`.property_inference` — sex prediction from projected data (thesis §3.3.4.2.2, §4.4.2).
* :mod:`.reconstruction` — decoders trained by MMD distribution matching (§3.3.4.2.3, §4.4.3).
* :mod:`.stats` — paired and Welch t-tests between conditions (scipy).
"""
