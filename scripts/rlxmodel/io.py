"""Atomic writes: write to a temporary file in the same folder, then rename over the target."""

import os
import tempfile


class AtomicFile:
    """Context manager yielding a binary file object; on success the file replaces `path`."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self._f = None
        self._tmp = None

    def __enter__(self):
        d = os.path.dirname(self.path)
        os.makedirs(d, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".", suffix=".tmp", dir=d)
        self._f = os.fdopen(fd, "wb")
        return self._f

    def __exit__(self, exc_type, exc, tb):
        try:
            self._f.close()
            if exc_type is None:
                os.chmod(self._tmp, 0o644)
                os.replace(self._tmp, self.path)
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
        return False


def write_bytes_atomic(path, data):
    with AtomicFile(path) as f:
        f.write(data)
