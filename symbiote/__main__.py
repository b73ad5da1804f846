from symbiote.cli import main

raise SystemExit(main())
