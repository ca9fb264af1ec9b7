"""Convex federated learning by consensus ADMM (seed 003 §2, GenoMed4All D6.2 chapter 3)."""

from .admm import (
    AdmmCentre,
    AdmmResult,
    AdmmSettings,
    admm_centralized,
    admm_distributed,
    admm_federated,
    consensus_server,
    server_objective,
    server_residuals,
    server_z_update,
)
from .problems import PROBLEMS, objective
from .reference import reference_solution

__all__ = [
    "PROBLEMS",
    "AdmmCentre",
    "AdmmResult",
    "AdmmSettings",
    "admm_centralized",
    "admm_distributed",
    "admm_federated",
    "consensus_server",
    "objective",
    "reference_solution",
    "server_objective",
    "server_residuals",
    "server_z_update",
]
