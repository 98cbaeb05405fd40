"""Result cache keys: dependency contents, versions and parameters all count."""

from __future__ import annotations

from laya_tui.core.cache import ResultCache, cache_key
from tests._signals import partial_result


def test_key_tracks_dependency_contents(tmp_path):
    dep = tmp_path / "k.py"
    dep.write_text("A = 1\n")
    versions = {"torch": "2.13.0"}
    k1 = cache_key("p", {"n": 1}, {}, versions, [str(dep)])
    assert k1 == cache_key("p", {"n": 1}, {}, versions, [str(dep)])
    dep.write_text("A = 2\n")
    assert cache_key("p", {"n": 1}, {}, versions, [str(dep)]) != k1


def test_key_tracks_versions_params_options(tmp_path):
    dep = tmp_path / "k.py"
    dep.write_text("x")
    base = cache_key("p", {"n": 1}, {"kernels": []}, {"torch": "2.13.0"}, [str(dep)])
    assert cache_key("p", {"n": 2}, {"kernels": []}, {"torch": "2.13.0"}, [str(dep)]) != base
    assert cache_key("p", {"n": 1}, {"kernels": []}, {"torch": "2.11.0"}, [str(dep)]) != base
    assert cache_key("p", {"n": 1}, {"kernels": ["/k"]}, {"torch": "2.13.0"}, [str(dep)]) != base
    assert cache_key("q", {"n": 1}, {"kernels": []}, {"torch": "2.13.0"}, [str(dep)]) != base


def test_missing_dependency_is_never_a_hit(tmp_path):
    assert cache_key("p", {}, {}, {}, [str(tmp_path / "gone.py")]) is None


def test_store_lookup_roundtrip_and_invalidation(tmp_path):
    dep = tmp_path / "k.py"
    dep.write_text("A = 1\n")
    cache = ResultCache(tmp_path / "cache")
    result = partial_result({"id": "p", "status": "ok", "signals": []})
    cache.store("p", {}, {}, {}, [str(dep)], result)
    assert cache.lookup("p", {}, {}, {}) == result
    dep.write_text("A = 2\n")
    assert cache.lookup("p", {}, {}, {}) is None


def test_crashes_and_probe_errors_are_not_cached(tmp_path):
    cache = ResultCache(tmp_path / "cache")
    cache.store("p", {}, {}, {}, [], partial_result({"id": "p", "status": "crashed"}))
    cache.store("q", {}, {}, {}, [], partial_result({"id": "q", "status": "failed",
                                                      "error": {"type": "X"}}))
    assert cache.lookup("p", {}, {}, {}) is None
    assert cache.lookup("q", {}, {}, {}) is None


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = ResultCache(tmp_path / "cache")
    cache.store("p", {}, {}, {}, [], partial_result({"id": "p", "status": "ok"}))
    for f in (tmp_path / "cache").iterdir():
        f.write_text("{truncated")
    assert cache.lookup("p", {}, {}, {}) is None
