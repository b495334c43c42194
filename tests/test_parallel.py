"""``parallel.ray_session``: the one place Ray is started, and stopped only by its starter."""

from __future__ import annotations

import sys
import types

import pytest

from tpugraphs_tools.errors import RayUnavailableError
from tpugraphs_tools.parallel import RayPool, ray_session


def _fake_ray(monkeypatch: pytest.MonkeyPatch, initialized: bool) -> list[object]:
    calls: list[object] = []
    state = {"up": initialized}

    def init(**kwargs: object) -> None:
        calls.append(("init", kwargs))
        state["up"] = True

    def shutdown() -> None:
        calls.append("shutdown")
        state["up"] = False

    fake = types.SimpleNamespace(is_initialized=lambda: state["up"], init=init,
                                 shutdown=shutdown)
    monkeypatch.setitem(sys.modules, "ray", fake)
    return calls


def test_starts_ray_and_shuts_it_down_even_on_error(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_ray(monkeypatch, initialized=False)
    with pytest.raises(KeyError), ray_session("h:6379") as ray:
        assert ray is sys.modules["ray"]
        raise KeyError("the work failed")
    assert calls == [("init", {"address": "h:6379", "include_dashboard": False,
                               "log_to_driver": False}), "shutdown"]


def test_a_joined_cluster_is_left_running(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_ray(monkeypatch, initialized=True)
    with ray_session(None), RayPool() as pool:
        pool._init()
    assert calls == []


def test_the_pool_starts_ray_on_first_use_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_ray(monkeypatch, initialized=False)
    with RayPool("h:1"):
        pass
    assert calls == []
    with RayPool("h:1") as pool:
        pool._init()
        pool._init()
    assert calls == [("init", {"address": "h:1", "include_dashboard": False,
                               "log_to_driver": False}), "shutdown"]


def test_without_ray_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)      # import ray → ImportError
    with pytest.raises(RayUnavailableError, match=r"pip install 'tpugraphs-tools\[ray\]'"), \
            ray_session():
        pass
