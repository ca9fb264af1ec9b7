"""Flower app entry points: the generic ServerApp and ClientApp of fedclust.flower.deploy."""

from fedclust.flower.deploy import client_app, server_app

__all__ = ["client_app", "server_app"]
