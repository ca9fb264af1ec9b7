"""D6.2 chapter 7 (seed 003 §6, the same work as seed 000): federated DEC on MDS binary data with
D6.2's own experiments — Table 7.1's configurations (a–g: AE epochs, dropout, random-flip rate,
UnitNorm), the k = 2–12 × clients (1/2/4/6/8) sweep, the SAE and clustering metrics (accuracy,
rounded accuracy, cycle accuracy, label changes, the G metric = train loss / evaluation loss)
and the comparison with an HDP topic model on the same binary features (silhouette and agreement).

Built on the DEC stage (the tied autoencoder :class:`fedclust.dec.model.TSAE`, the DEC model,
the local k-means message and the max–min centroid aggregation of :mod:`fedclust.dec.federated`)
and on the federation core (``federate``, ``run_rounds``, FedAvg), file for file on the stage
skeleton: :mod:`.protocols`, :mod:`.centre`, :mod:`.server`, :mod:`.pooled` (the HDP
reference), :mod:`.experiment`, :mod:`.workflow`, :mod:`.report`.
"""
