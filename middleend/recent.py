"""A bounded memo: the most recently used entries, at most a given number of them."""
from __future__ import annotations

import threading
from collections import OrderedDict


class Recent:
    """At most `size` entries; adding one beyond drops the least recently used. Safe to share between
    threads (functions may be compiled on several at once)."""

    def __init__(self, size):
        self.size = size
        self._entries = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        """The entry's value (now the most recently used), or `default`."""
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key]

    def put(self, key, value) -> None:
        """Set the entry, dropping the least recently used one beyond `size`."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
