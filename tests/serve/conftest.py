from __future__ import annotations

import pytest

from gate.testing.fake_openai import FakeOpenAI


@pytest.fixture
def fake():
    srv = FakeOpenAI().start()
    yield srv
    try:
        srv.kill()
    except OSError:
        pass
