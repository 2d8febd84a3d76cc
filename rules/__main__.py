"""``python -m rules list`` (name, family, one-line doc) and ``python -m rules check`` (the checker on
every built-in DSL rule)."""
import argparse
import sys

from eqsat_rules.library import all_rules, builtin_dsl_rules, shape_rules


def _list(with_analysis: bool) -> int:
    rows = all_rules() + (shape_rules() if with_analysis else [])
    width = max(len(r.name) for r in rows)
    for r in rows:
        print(f"{r.name:<{width}}  {r.family:<9}  {r.doc.splitlines()[0]}")
    return 0


def _check() -> int:
    from eqsat_rules.checker import check
    bad = 0
    for r in builtin_dsl_rules():
        res = check(r)
        status = "ok" if res.ok else "UNSOUND"
        bad += not res.ok
        print(f"{r.name:<28} {status:<8} {res.admitted} instances" + (f"  {res.problems[0]}" if res.problems else ""))
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rules")
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="every rule: name, family, one-line doc")
    ls.add_argument("--analysis", action="store_true", help="include the shape/dtype analysis rules")
    sub.add_parser("check", help="run the checker on every built-in DSL rule")
    args = p.parse_args(argv)
    return _list(args.analysis) if args.cmd == "list" else _check()


if __name__ == "__main__":
    sys.exit(main())
