"""``python -m eqsat_torch.cache clear`` deletes every entry; ``python -m eqsat_torch.cache info`` says
where the cache is, how many entries it holds, their size and the cap (``docs/reference.md`` (The cache))."""
from __future__ import annotations

import argparse

from eqsat_torch.cache import store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqsat_torch.cache", description=__doc__)
    parser.add_argument("command", choices=["clear", "info"])
    args = parser.parse_args(argv)
    if args.command == "clear":
        print(f"removed {store.clear()} entries from {store.folder()}")
    else:
        s = store.summary()
        print(f"{s['folder']}: {s['entries']} entries, {s['bytes'] / 2**20:.1f} MB of {s['limit_bytes'] / 2**20:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
