"""python -m pdem run|info|plot ... (pdem/cli.py, docs/cli.md)."""
import sys

from .cli import main

sys.exit(main())
