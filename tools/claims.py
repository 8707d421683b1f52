"""Write each study's claims table into its doc from a result tree.

    python tools/claims.py all /path/to/run            # every study, docs/<study>.md
    python tools/claims.py laf /path/to/run --note "laf=..."

The table (between ``<!-- claims:begin -->`` and ``<!-- claims:end -->``) is rendered by
``labelfree.claims`` from the run's checks tables and the claims each study's report module
declares (``CLAIMS``, ``NOT_CLAIMS``).
"""

from labelfree.claims import main

if __name__ == "__main__":
    raise SystemExit(main())
