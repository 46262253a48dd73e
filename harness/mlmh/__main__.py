from mlmh.cli import main

main()
