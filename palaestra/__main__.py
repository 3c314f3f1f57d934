"""``python -m palaestra``: the command line."""

from palaestra.cli.entry import main

if __name__ == "__main__":
    main()
