"""The documents a run reads, and what it makes of them besides generations:

- :mod:`mlmh.data.splits`: the roles of a corpus's documents (train, validation, test) and the one rule that no
  group sits in two splits;
- :mod:`mlmh.data.selection`: which documents of a split a run regenerates;
- :mod:`mlmh.data.synthetic`: synthetic corpora, the train documents rewritten by a condition's generations;
- :mod:`mlmh.data.wordnet`: WordNet for METEOR and the taggers, without a network.
"""
