"""`python -m symbiote.cli`: the same as `python -m symbiote`."""

from symbiote.cli import main

raise SystemExit(main())
