"""``python -m schedlab`` runs the command line."""

from schedlab.cli import main

main()
