"""`python -m powercontext_host <host> <event> [options]`: a hook command (see `hook.py`)."""

import sys

from .hook import main

sys.exit(main(sys.argv[1:]))
