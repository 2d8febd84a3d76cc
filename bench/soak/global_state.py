"""Global state a case may leave behind (grad mode, the dispatcher's
thread-local include/exclude sets), and putting it back so the next case starts clean."""
from __future__ import annotations

import torch


def _restore_modes() -> None:
    """An error inside a ``no_grad`` region of an eagerly run graph leaves grad mode off (an
    ``inference_mode`` region's guard restores its mode when the failed frame is freed)."""
    torch._C._set_grad_enabled(True)


def _dispatch_tls() -> dict:
    """The thread's included/excluded dispatch keys."""
    state = {}
    for name, key in torch._C.DispatchKey.__members__.items():
        try:
            state[name] = (torch._C._dispatch_tls_is_dispatch_key_included(key),
                           torch._C._dispatch_tls_is_dispatch_key_excluded(key))
        except Exception:  # noqa: BLE001 — alias keys have no TLS bit
            pass
    return state


_CLEAN_TLS = _dispatch_tls()


def _heal_dispatch_tls() -> list[str]:
    """Some compile failures inside AOTAutograd leave Python/Functionalize dispatch keys set in the
    thread's state (pytorch/pytorch#180823), after which every op raises "PythonDispatcherTLS was not
    set": put back the state the process started with, and say which keys needed it."""
    healed = []
    for name, (inc, exc) in _CLEAN_TLS.items():
        key = torch._C.DispatchKey.__members__[name]
        if torch._C._dispatch_tls_is_dispatch_key_included(key) != inc:
            torch._C._dispatch_tls_set_dispatch_key_included(key, inc)
            healed.append(name)
        if torch._C._dispatch_tls_is_dispatch_key_excluded(key) != exc:
            torch._C._dispatch_tls_set_dispatch_key_excluded(key, exc)
            healed.append(name)
    return healed
