"""The machine mlmh runs on, below everything that knows what a run is:

- :mod:`mlmh.machine.paths`: where mlmh keeps things (the user cache, private folders and files);
- :mod:`mlmh.machine.environment`: the machine's refusals in words (a full disk, a read-only folder, a long name);
- :mod:`mlmh.machine.devices`: where models run (``device=auto``, torch threads by model width);
- :mod:`mlmh.machine.seeding`: per-sample seeds, so nothing depends on batch size, order or executor;
- :mod:`mlmh.machine.worker_pool`: spawned worker processes that end with their driver, and what they inherit;
- :mod:`mlmh.machine.allocator`: the command line's memory settings (glibc's allocator, the garbage collector);
- :mod:`mlmh.machine.escape`: text from outside escaped where it meets a sink (terminal, markdown, TOML);
- :mod:`mlmh.machine.interrupts`: whether a stop is a real interrupt;
- :mod:`mlmh.machine.terminal`: output on a terminal and in a log (the one escape of Rich text, the libraries' bars).
"""
