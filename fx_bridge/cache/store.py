"""Cache entries on disk, one file per key in ``folder()``: ``$EQSAT_CACHE_DIR``, else
``<Inductor's cache dir>/eqsat/``.

A file is ``MAGIC``, the key it was written for, the SHA-256 of the payload, then the payload. A
reader trusts a file only when all three check out: a truncated or corrupt file, or one written for
another key, is a warning and a miss (the caller recomputes and overwrites it). Writers write a
temporary file in the same folder and ``os.replace`` it over the entry, so a reader sees a whole
old entry or a whole new one, never a torn one, however many processes write at once.

The folder is used only when this user owns it and neither group nor others may write to it
(``usable``): anyone who can write an entry chooses the graph a hit compiles. The entries' total
size is capped (``$EQSAT_CACHE_SIZE_MB``, default 256): after each write the least recently used
entries (oldest modification time; a hit sets it to now) are deleted until the rest fit.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import stat
import tempfile

from eqsat_torch.inductor import compat

log = logging.getLogger("eqsat")

MAGIC = b"eqsat-cache 2\n"
DEFAULT_SIZE_MB = 256
_refused: set[str] = set()  # folders already reported as refused, so the warning comes once


def folder() -> pathlib.Path:
    override = os.environ.get("EQSAT_CACHE_DIR")
    return pathlib.Path(override) if override else pathlib.Path(compat.inductor_cache_dir()) / "eqsat"


def path_of(key: str) -> pathlib.Path:
    return folder() / f"{key}.entry"


def size_limit() -> int:
    """The cap on the entries' total size, in bytes (``EQSAT_CACHE_SIZE_MB``; a bad value: the default)."""
    text = os.environ.get("EQSAT_CACHE_SIZE_MB", "")
    try:
        mb = float(text) if text else DEFAULT_SIZE_MB
    except ValueError:
        log.warning("eqsat cache: EQSAT_CACHE_SIZE_MB=%r is not a number; using %d", text, DEFAULT_SIZE_MB)
        mb = DEFAULT_SIZE_MB
    return max(0, int(mb * 1024 * 1024))


def usable() -> bool:
    """The folder exists (created private if not), this user owns it, and only its owner may write
    to it. A refused folder is a warning once per process; the compile then runs without the cache."""
    path = folder()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as e:
        return _refuse(path, f"it cannot be created or read ({e})")
    if not stat.S_ISDIR(st.st_mode):
        return _refuse(path, "it is not a folder")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return _refuse(path, f"it belongs to user id {st.st_uid}, not to this user ({os.getuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return _refuse(path, f"group or others may write to it (mode {stat.filemode(st.st_mode)}; chmod go-w fixes it)")
    return True


def _refuse(path: pathlib.Path, why: str) -> bool:
    if str(path) not in _refused:
        _refused.add(str(path))
        log.warning("eqsat cache: not using %s: %s; compiling without the cache", path, why)
    return False


def load(key: str) -> bytes | None:
    """The payload stored under ``key``; None when there is none or it cannot be trusted. A hit
    marks the entry as recently used."""
    path = path_of(key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("eqsat cache: cannot read %s (%s); recomputing", path, e)
        return None
    header = MAGIC + key.encode() + b"\n"
    if not data.startswith(MAGIC):
        log.warning("eqsat cache: %s is not a cache entry (corrupt or truncated); recomputing", path)
        return None
    if not data.startswith(header):
        log.warning("eqsat cache: %s was written for another key (a foreign entry); ignoring it", path)
        return None
    digest, sep, payload = data[len(header):].partition(b"\n")
    if not sep or hashlib.sha256(payload).hexdigest().encode() != digest:
        log.warning("eqsat cache: %s fails its checksum (corrupt or truncated); recomputing", path)
        return None
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return payload


def save(key: str, payload: bytes) -> None:
    """Store ``payload`` under ``key`` atomically, then evict down to the size limit; a failure to
    write is a warning, never an error."""
    path = path_of(key)
    data = MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("eqsat cache: cannot write %s (%s)", path, e)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        return
    evict(size_limit())


def _entries() -> list[tuple[int, int, pathlib.Path]]:
    """(modification time in ns, size, path) of every entry, most recently used first."""
    out = []
    for p in folder().glob("*.entry"):
        try:
            st = p.stat()
        except FileNotFoundError:  # evicted or cleared by another process meanwhile
            continue
        out.append((st.st_mtime_ns, st.st_size, p))
    return sorted(out, key=lambda e: (e[0], e[2].name), reverse=True)


def evict(limit: int) -> int:
    """Delete the least recently used entries until the rest total at most ``limit`` bytes; how many."""
    total, removed = 0, 0
    for _, size, path in _entries():
        total += size
        if total > limit:
            removed += _remove(path)
    if removed:
        log.debug("eqsat cache: evicted %d entries to stay under %d bytes", removed, limit)
    return removed


def _remove(path: pathlib.Path) -> int:
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0


def clear() -> int:
    """Delete every entry (and temporaries a killed writer left behind); how many entries."""
    path = folder()
    if not path.is_dir():
        return 0
    for tmp in path.glob(".*.tmp"):
        _remove(tmp)
    return sum(_remove(p) for p in path.glob("*.entry"))


def summary() -> dict:
    """Where the cache is, how many entries, their total size and the cap."""
    entries = _entries() if folder().is_dir() else []
    return {"folder": str(folder()), "entries": len(entries), "bytes": sum(e[1] for e in entries),
            "limit_bytes": size_limit()}
