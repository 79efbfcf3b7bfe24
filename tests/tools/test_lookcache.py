"""The registry of kept looks (`kward.tools.lookcache`): one slot per workspace, held by one
command at a time, at most `capacity` of them with the least recently used dropped (its
watcher closed, never one in use), and `close_all` at shutdown (a slot in use is closed
when it comes back); the runtime's shutdown calls it."""

import threading

from kward.tools.lookcache import LookCache


class FakeWatcher:
    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


def held(cache, root, watcher=None):
    slot = cache.checkout(root)
    assert slot is not None
    if watcher is not None:
        slot.watcher = watcher
    return slot


def test_one_holder_at_a_time():
    cache = LookCache(2)
    slot = held(cache, "/a")
    assert cache.checkout("/a") is None  # busy: the other command looks without it
    slot.look = "kept"
    cache.checkin(slot)
    again = held(cache, "/a")
    assert again is slot and again.look == "kept"
    cache.checkin(again)


def test_the_least_recently_used_is_dropped_and_closed():
    cache = LookCache(2)
    watchers = {root: FakeWatcher() for root in ("/a", "/b", "/c", "/d")}
    for root in ("/a", "/b"):
        cache.checkin(held(cache, root, watchers[root]))
    cache.checkin(held(cache, "/a"))  # /a used again: /b is the oldest now
    cache.checkin(held(cache, "/c", watchers["/c"]))
    assert "/b" not in cache and "/a" in cache and "/c" in cache and len(cache) == 2
    assert watchers["/b"].closed == 1 and watchers["/a"].closed == 0
    busy = held(cache, "/a")  # in use: never dropped
    cache.checkin(held(cache, "/d", watchers["/d"]))
    assert "/a" in cache and "/c" not in cache and watchers["/c"].closed == 1
    cache.checkin(busy)


def test_close_all_closes_idle_slots_now_and_busy_ones_when_they_come_back():
    cache = LookCache(4)
    idle_watcher, busy_watcher = FakeWatcher(), FakeWatcher()
    cache.checkin(held(cache, "/idle", idle_watcher))
    busy = held(cache, "/busy", busy_watcher)
    cache.close_all()
    assert idle_watcher.closed == 1 and busy_watcher.closed == 0 and len(cache) == 0
    cache.checkin(busy)
    assert busy_watcher.closed == 1 and busy.watcher is None
    fresh = held(cache, "/busy")  # a later runtime of the process starts afresh
    assert fresh is not busy and fresh.watcher is None
    cache.checkin(fresh)
    cache.close_all()
    cache.close_all()  # idempotent


def test_many_threads_never_share_a_slot():
    cache = LookCache(8)
    holders: dict[str, int] = {}
    clashes = []
    lock = threading.Lock()

    def work(n):
        for i in range(200):
            slot = cache.checkout(f"/ws{i % 3}")
            if slot is None:
                continue
            with lock:
                if holders.get(slot.root):
                    clashes.append(slot.root)
                holders[slot.root] = n
            with lock:
                holders[slot.root] = 0
            cache.checkin(slot)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert clashes == [] and not any(t.is_alive() for t in threads)


def test_the_runtime_shutdown_closes_the_watchers(tmp_path, isolated_home):
    from kward.config.settings import resolve_settings
    from kward.config.store import ConfigStore, resolve_paths
    from kward.runtime import Runtime
    from kward.tools import lookcache
    from lib.tools_helpers import call, make_ctx

    ws = tmp_path / "ws"
    call(make_ctx(ws), "run_shell_command", command="echo x > x.txt")  # a look kept, with its watcher
    slot = lookcache.REGISTRY.checkout(str(ws))
    assert slot is not None and slot.watcher is not None
    watcher = slot.watcher
    lookcache.REGISTRY.checkin(slot)
    env = {"HOME": str(isolated_home), "KWARD_PROVIDER": "scripted"}
    paths = resolve_paths(env)
    rt = Runtime(paths=paths, config=ConfigStore(paths), settings=resolve_settings({}, env), launch_cwd=ws, env=env,
                 submit=lambda job: False, event_sink=lambda event: None, notify=lambda notice: None)
    rt.shutdown()
    assert not watcher.usable and str(ws) not in lookcache.REGISTRY
