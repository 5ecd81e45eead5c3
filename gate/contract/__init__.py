"""Data contracts: one YAML file per dataset, the single source of truth for what a row must be."""

from gate.contract.model import Contract, load_contract

__all__ = ["Contract", "load_contract"]
