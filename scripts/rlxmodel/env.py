"""Standard-library-only start-up check: make sure numpy can be imported.

The first python3 on PATH may be one without numpy (e.g. a pyenv shim) while the system
python3 has it (Debian: apt-get install -y python3-numpy). `ensure_numpy()` re-executes the
running script with the first python3 that has numpy ($PYTHON, then PATH, then /usr/bin).
"""

import os
import subprocess
import sys

_FLAG = "_RLX_NUMPY_REEXEC"


def ensure_numpy():
    try:
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    if not os.environ.get(_FLAG):
        here = os.path.realpath(sys.executable or "")
        candidates = []
        if os.environ.get("PYTHON"):
            candidates.append(os.environ["PYTHON"])
        for d in os.environ.get("PATH", "").split(os.pathsep):
            candidates.append(os.path.join(d or ".", "python3"))
        candidates += ["/usr/bin/python3", "/usr/local/bin/python3"]
        seen = {here}
        for c in candidates:
            real = os.path.realpath(c)
            if real in seen or not os.access(real, os.X_OK):
                continue
            seen.add(real)
            try:
                ok = subprocess.run([c, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                os.environ[_FLAG] = "1"
                sys.stdout.flush()
                sys.stderr.flush()
                os.execv(c, [c, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    sys.exit("numpy is required: apt-get install -y python3-numpy (or set PYTHON to a python3 that has it)")
