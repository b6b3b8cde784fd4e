"""`python -m invmap` runs the same entry point as the `invmap` script."""

from invmap.entry import main

main()
