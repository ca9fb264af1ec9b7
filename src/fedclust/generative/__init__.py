"""Federated generative models of seed 003 (GenoMed4All D6.2 chapters 5, 6 and 9).

- SAVAE (ch. 6, :mod:`.savae`): a VAE over heterogeneous clinical covariates with a Weibull
  time decoder, federated by FedAvg; the good node / poor node protocol of §6.6 with virtual
  patients (:func:`.experiment.run_savae`).
- The Deep Generative Decoder (ch. 9, :mod:`.dgd`): decoder + Gaussian-mixture prior by FedAvg,
  per-sample representations that never leave their centre (:func:`.experiment.run_dgd`).
- RadialGAN (ch. 5, :mod:`.radialgan`): per-centre encoders into a shared latent space whose
  codes are the only cross-centre payload (:func:`.experiment.run_radialgan`).

Stage skeleton (docs/ARCHITECTURE.md): :mod:`.protocols` (every message), :mod:`.centre`,
:mod:`.server`, :mod:`.pooled`, :mod:`.experiment`, :mod:`.workflow`, :mod:`.report`.
"""
