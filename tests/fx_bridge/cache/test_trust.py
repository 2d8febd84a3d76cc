"""What the cache trusts: an entry is data, so a planted file (valid header and checksum) runs
nothing and misses; a graph that is not data is not cached; a folder someone else can write to is
not used; the entries stay under the size cap, least recently used out first; the cache clears."""
import json
import logging
import math
import os
import pickle
import subprocess
import sys

import pytest
import torch

from eqsat_torch.inductor import compat
from eqsat_torch.backend import eqsat_backend
from eqsat_torch.cache import store
from eqsat_torch.cache.key import Uncacheable
from eqsat_torch.cache.serialize import Vocabulary, _Decoder, _Encoder, dump_graph


def split_sigmoid_cat(x):
    return torch.cat([torch.sigmoid(p) for p in torch.split(x, 4, dim=1)], dim=1)


def compile_once(fn, x):
    """One fresh compile, the optimized graph run eagerly and compared with eager; the report."""
    compat.reset_dynamo()
    b = eqsat_backend(inner="eager")
    torch.testing.assert_close(torch.compile(fn, backend=b)(x), fn(x))
    (report,) = b.reports
    return report


def entries(folder):
    return sorted(folder.glob("*.entry"))


def _key_of(path):
    return path.name.removesuffix(".entry")


class _WritesMarker:
    """Unpickling this creates ``path``: what a planted pickle could do instead of anything else."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').close()",))


def test_a_planted_pickle_runs_nothing_and_misses(cache_dir, tmp_path, caplog):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    (path,) = entries(cache_dir)
    marker = tmp_path / "pwned"
    store.save(_key_of(path), pickle.dumps({"graph": _WritesMarker(marker), "report": {}}))  # valid header, checksum
    with caplog.at_level(logging.DEBUG, logger="eqsat"):
        assert compile_once(split_sigmoid_cat, x).cache == "miss"  # outputs checked against eager inside
    assert not marker.exists()
    assert "is not used (not JSON" in caplog.text
    assert compile_once(split_sigmoid_cat, x).cache == "hit"  # the miss wrote a whole entry over it


def _planted(path, marker, target, op="call_function"):
    """The stored entry at ``path`` with its sigmoid replaced by ``target`` called on code that would
    create ``marker``."""
    entry = json.loads(store.load(_key_of(path)))
    for node in entry["graph"]:
        if node["op"] == "call_function" and "sigmoid" in node["target"]:
            node["op"], node["target"] = op, target
            node["args"] = {"tuple": [f"open({str(marker)!r}, 'w').close()" if op == "call_function" else node["args"]["tuple"][0]]}
            node["kwargs"] = {"dict": []}
    return json.dumps(entry).encode()


@pytest.mark.parametrize("target", ["builtins.exec", "builtins.eval", "posix.system", "torch.load",
                                    "torch.from_file", "torch.ops.aten.from_file.default", "torch.hub.load"])
def test_a_planted_entry_naming_code_is_a_miss(cache_dir, tmp_path, caplog, target):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    (path,) = entries(cache_dir)
    marker = tmp_path / "pwned"
    store.save(_key_of(path), _planted(path, marker, target))
    with caplog.at_level(logging.DEBUG, logger="eqsat"):
        assert compile_once(split_sigmoid_cat, x).cache == "miss"
    assert not marker.exists()
    assert f"call target {target!r} is not in the vocabulary" in caplog.text


def test_a_planted_method_outside_the_vocabulary_is_a_miss(cache_dir, tmp_path, caplog):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    (path,) = entries(cache_dir)
    store.save(_key_of(path), _planted(path, tmp_path / "unused", "__reduce_ex__", op="call_method"))
    with caplog.at_level(logging.DEBUG, logger="eqsat"):
        assert compile_once(split_sigmoid_cat, x).cache == "miss"
    assert "method '__reduce_ex__' is not in the vocabulary" in caplog.text


VALUES = [0, -3, 2**70, 1.5, -0.0, math.inf, -math.inf, True, False, None, "relu", "", torch.float16,
          torch.bool, torch.device("cpu"), torch.device("cuda", 1), torch.channels_last, torch.strided,
          slice(None, 4, 2), Ellipsis, 1 + 2j, torch.Size([2, 3]), [1, [2, (3, None)]], (), ((1,), [2.5]),
          {"dim": 1, 2: (torch.float32, slice(1, None))}]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_every_argument_kind_round_trips_as_json(value):
    back = _Decoder({}, {})(json.loads(json.dumps(_Encoder(None)(value), allow_nan=False)))
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


def test_nan_round_trips():
    assert math.isnan(_Decoder({}, {})(json.loads(json.dumps(_Encoder(None)(math.nan), allow_nan=False))))


def _traced(fn):
    return torch.fx.symbolic_trace(fn)


def test_a_graph_that_is_not_data_is_not_cached():
    holder = object()
    gm = _traced(lambda x: torch.relu(x))
    (relu,) = gm.graph.find_nodes(op="call_function", target=torch.relu)
    relu.kwargs = {"tag": holder}
    with pytest.raises(Uncacheable, match="object is not data"):
        dump_graph(gm, Vocabulary(gm))


def test_a_target_the_reader_would_not_resolve_is_not_cached():
    compiled = _traced(lambda x: torch.relu(x))
    optimized = _traced(lambda x: torch.fft.fft(x))  # not the compiled graph's, not the registry's
    with pytest.raises(Uncacheable, match="torch._C._fft.fft_fft.*not one the cache resolves"):
        dump_graph(optimized, Vocabulary(compiled))
    dump_graph(optimized, Vocabulary(optimized))  # the compiled graph's own targets are trusted


@pytest.mark.parametrize("mode", [0o770, 0o757])
def test_a_folder_others_can_write_is_refused_once(cache_dir, tmp_path, monkeypatch, caplog, mode):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(mode)
    monkeypatch.setenv("EQSAT_CACHE_DIR", str(folder))
    x = torch.randn(8, 16)
    with caplog.at_level(logging.WARNING, logger="eqsat"):
        reports = [compile_once(split_sigmoid_cat, x) for _ in range(2)]
    assert [r.cache for r in reports] == ["off", "off"] and all(r.changed for r in reports)
    assert caplog.text.count("group or others may write to it") == 1
    assert list(folder.iterdir()) == []
    folder.chmod(0o700)
    assert compile_once(split_sigmoid_cat, x).cache == "miss" and len(list(folder.glob("*.entry"))) == 1


def test_a_folder_of_another_user_is_refused(cache_dir, tmp_path, monkeypatch, caplog):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("EQSAT_CACHE_DIR", str(folder))
    monkeypatch.setattr(os, "getuid", lambda: os.stat(folder).st_uid + 1)  # as seen by another user
    with caplog.at_level(logging.WARNING, logger="eqsat"):
        assert compile_once(split_sigmoid_cat, torch.randn(8, 16)).cache == "off"
    assert "belongs to user id" in caplog.text and list(folder.iterdir()) == []


def test_a_new_folder_is_private(cache_dir, tmp_path, monkeypatch):
    folder = tmp_path / "new" / "eqsat"
    monkeypatch.setenv("EQSAT_CACHE_DIR", str(folder))
    assert compile_once(split_sigmoid_cat, torch.randn(8, 16)).cache == "miss"
    assert folder.stat().st_mode & 0o777 == 0o700 and len(list(folder.glob("*.entry"))) == 1


def test_eviction_keeps_the_total_under_the_cap_and_drops_the_least_recently_used(cache_dir, monkeypatch):
    payload = b"x" * 100_000
    monkeypatch.setenv("EQSAT_CACHE_SIZE_MB", str(350_000 / 2**20))  # three entries fit, not four
    keys = {name: name * 64 for name in "abcd"}
    for when, name in enumerate("abc"):
        store.save(keys[name], payload)
        os.utime(store.path_of(keys[name]), ns=(10**18 + when * 10**9,) * 2)  # a, then b, then c
    assert store.load(keys["a"]) == payload  # a hit: a is now the most recently used
    store.save(keys["d"], payload)
    assert {p.name for p in entries(cache_dir)} == {keys[n] + ".entry" for n in "acd"}  # b went
    assert sum(p.stat().st_size for p in entries(cache_dir)) <= store.size_limit()


def test_an_entry_larger_than_the_cap_is_not_kept(cache_dir, monkeypatch):
    monkeypatch.setenv("EQSAT_CACHE_SIZE_MB", "0.01")
    store.save("ab" * 32, b"x" * 20_000)
    assert entries(cache_dir) == []


def test_clear_from_the_command_line(cache_dir, tmp_path):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    assert len(entries(cache_dir)) == 1
    run = lambda *args: subprocess.run([sys.executable, "-m", "eqsat_torch.cache", *args], check=True,
                                       capture_output=True, text=True, env=os.environ).stdout
    assert f"{cache_dir}: 1 entries" in run("info")
    assert run("clear") == f"removed 1 entries from {cache_dir}\n"
    assert entries(cache_dir) == [] and compile_once(split_sigmoid_cat, x).cache == "miss"
