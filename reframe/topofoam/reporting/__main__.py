import sys

from topofoam.reporting.cli import main

sys.exit(main())
