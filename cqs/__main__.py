"""`python -m cqs`: the same as the `cqs` console script."""

from cqs.main import main

raise SystemExit(main())
