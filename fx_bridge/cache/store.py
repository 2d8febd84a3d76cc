"""Cache entries on disk, one file per key under ``<Inductor's cache dir>/eqsat/``.

A file is ``MAGIC``, the key it was written for, the SHA-256 of the payload, then the payload. A
reader trusts a file only when all three check out: a truncated or corrupt file, or one written for
another key, is a warning and a miss (the caller recomputes and overwrites it). Writers write a
temporary file in the same folder and ``os.replace`` it over the entry, so a reader sees a whole
old entry or a whole new one, never a torn one, however many processes write at once.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import tempfile

from .. import torch_compat

log = logging.getLogger("eqsat")

MAGIC = b"eqsat-cache 1\n"


def folder() -> pathlib.Path:
    return pathlib.Path(torch_compat.inductor_cache_dir()) / "eqsat"


def path_of(key: str) -> pathlib.Path:
    return folder() / f"{key}.entry"


def load(key: str) -> bytes | None:
    """The payload stored under ``key``; None when there is none or it cannot be trusted."""
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
    return payload


def save(key: str, payload: bytes) -> None:
    """Store ``payload`` under ``key`` atomically; a failure to write is a warning, never an error."""
    path = path_of(key)
    data = MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("eqsat cache: cannot write %s (%s)", path, e)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
