import sys

from rankmap.cli import main

sys.exit(main())
