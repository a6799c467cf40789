import os
import sys

from . import main

status = main()
if status == 130:
    # Interrupted, and said so in one line: exit with 130 now. Left to the interpreter, a
    # KeyboardInterrupt that passed through C code (pyo3) before `main` caught it makes
    # Python end by killing itself with SIGINT instead.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)
sys.exit(status)
