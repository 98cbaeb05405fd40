"""``python -m laya_tui``: the same command as the ``laya-tui`` script."""

import sys

from laya_tui.cli.main import main

sys.exit(main())
