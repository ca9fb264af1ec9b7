"""fedclust: federated clustering and learning on sensitive biomedical data.

The library behind the Snakemake workflow. Every algorithm is importable and testable without
Snakemake. Federated algorithms are split into center-side functions (they see only local data and
return plain messages) and server-side functions (they see only messages); every message crosses
a :class:`fedclust.federation.Ledger`, which is the privacy boundary.
"""

__version__ = "0.1.0"
