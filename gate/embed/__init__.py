"""Sentence embeddings for paraphrase dedup: the model on disk (`gate.embed.model`) and the encoder and pair search
(`gate.embed.encoder`, which imports torch lazily)."""
