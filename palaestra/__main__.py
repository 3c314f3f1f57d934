"""``python -m palaestra``: the command line."""

from palaestra.cli.main import main

if __name__ == "__main__":
    main()
