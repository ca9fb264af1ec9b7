"""Federated deep embedded clustering with a tied stacked autoencoder (seed 000)."""
