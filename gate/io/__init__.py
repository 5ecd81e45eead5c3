"""Reading datasets (JSONL, compressed JSONL, Parquet, Hugging Face `save_to_disk`) and writing outputs atomically."""
