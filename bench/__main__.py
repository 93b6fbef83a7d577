"""`python -m bench` is the `compaction-bench` command."""

import sys

from bench.cli.main import main

sys.exit(main())
