"""Convex federated learning by consensus ADMM (seed 003 §2, GenoMed4All D6.2 chapter 3)."""

from .admm import (
    AdmmCenter,
    AdmmResult,
    AdmmSettings,
    admm_centralized,
    admm_distributed,
    server_objective,
    server_residuals,
    server_z_update,
)
from .problems import PROBLEMS, objective
from .reference import reference_solution

__all__ = [
    "PROBLEMS",
    "AdmmCenter",
    "AdmmResult",
    "AdmmSettings",
    "admm_centralized",
    "admm_distributed",
    "objective",
    "reference_solution",
    "server_objective",
    "server_residuals",
    "server_z_update",
]
