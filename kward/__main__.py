"""`python3 -m kward ...` runs the same entry point as the `kward` console script."""

import sys

from kward.cli import main

sys.exit(main())
