import sys

from acceptance.cli import main

sys.exit(main())
