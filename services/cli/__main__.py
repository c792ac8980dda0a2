"""`python -m services.cli`: the `nimbus` command."""

import sys

from services.cli import main

sys.exit(main())
