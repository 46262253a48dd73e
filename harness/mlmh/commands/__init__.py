"""One module per ``mlmh`` subcommand; each is imported only when its command runs."""
