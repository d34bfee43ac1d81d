"""A process that reads its stdin and never answers: an MCP server that never starts.

`--pid-file PATH` writes the process id there, so a test can check it is gone afterwards.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if "--pid-file" in sys.argv:
    Path(sys.argv[sys.argv.index("--pid-file") + 1]).write_text(str(os.getpid()))
for _line in sys.stdin:  # read every request, answer none; end when stdin closes
    pass
