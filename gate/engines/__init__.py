"""Engines behind one interface: embedded transformers, vLLM, SGLang, any OpenAI-compatible URL."""
