"""Helpers for testing what you build on gate (a check, a scorer, a client) without a GPU or a model server.

`gate.testing.fake_openai.FakeOpenAI` is a small but real OpenAI-compatible HTTP server (stdlib only): score a
scorecard against it with `--engine url --base-url SERVER.url`; docs/extending.md shows how.
"""
