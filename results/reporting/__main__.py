import sys

from reporting.cli import main

sys.exit(main())
