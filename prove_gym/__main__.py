import sys

from prove_gym.cli import main

sys.exit(main())
