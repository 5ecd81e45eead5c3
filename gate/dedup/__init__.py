"""Near-duplicate detection (datasketch-compatible MinHash + LSH, exact verification); a pure library, no I/O."""

from gate.dedup.cluster import (
    Cluster,
    CrossPair,
    CrossResult,
    DuplicateAssignment,
    NearDupConfig,
    NearDupCounters,
    NearDupIndex,
    NearDupResult,
    VerifiedPair,
    compute_signatures,
    find_near_duplicates,
)
from gate.dedup.lsh import LshPlan, choose_bands, detection_curve
from gate.dedup.minhash import MinHashConfig, minhash_signatures
from gate.dedup.shingles import ShingleConfig, normalize, shingle_batch, shingle_hashes
from gate.dedup.sketch import Sketch, sketch_signatures

__all__ = [
    "Cluster",
    "CrossPair",
    "CrossResult",
    "DuplicateAssignment",
    "LshPlan",
    "MinHashConfig",
    "NearDupConfig",
    "NearDupCounters",
    "NearDupIndex",
    "NearDupResult",
    "ShingleConfig",
    "Sketch",
    "VerifiedPair",
    "choose_bands",
    "compute_signatures",
    "detection_curve",
    "find_near_duplicates",
    "minhash_signatures",
    "normalize",
    "shingle_batch",
    "shingle_hashes",
    "sketch_signatures",
]
