"""Federated agglomerative hierarchical clustering (seed 001)."""
