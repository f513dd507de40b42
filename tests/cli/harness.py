"""Shared by the CLI tests in this folder: their --rlx / --work arguments, a small random model
made once per work folder by scripts/make_test_model.py, and the 'N passed, M failed' report
(exit status 1 if any check failed)."""
import argparse
import os
import subprocess
import sys

MAKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                     "make_test_model.py")


def parse_args(*defaults):
    """--rlx PATH --work DIR (made if missing), plus optional (flag, default) pairs."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx", required=True)
    ap.add_argument("--work", required=True)
    for flag, default in defaults:
        ap.add_argument(flag, default=default)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    return a


def test_model(work, name, *maker_args):
    """WORK/NAME, written by make_test_model.py MAKER_ARGS unless it is there already."""
    path = os.path.join(work, name)
    if not os.path.exists(path):
        subprocess.run([sys.executable, MAKER, "--out", path, "--quiet", *maker_args], check=True)
    return path


def report(checks):
    """Prints each (name, ok) check and the totals; returns the exit status."""
    failed = 0
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
        failed += not ok
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0
