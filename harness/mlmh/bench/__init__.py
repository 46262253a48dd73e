"""``mlmh bench``: fair timings of the harness against bare model forward passes.

Why it is built this way:
- Threads are pinned (``torch.set_num_threads``) so every timing uses the same cores.
- Every timed function runs once untimed first (warm-up: allocator, kernels, lazy imports), then
  ``runs`` times; we report the median, which one noisy run cannot move.
- A ratio's numerator and denominator are measured in the same process, their runs interleaved
  (harness, bare, harness, bare, ...), so drift of the machine hits both sides alike.
- Peak memory is the process's peak resident set size (RSS) during a measurement. On Linux the peak
  (``VmHWM``) is reset before each measurement through ``/proc/self/clear_refs``; where that is not
  possible we fall back to the growth of ``resource.getrusage().ru_maxrss`` (a lower bound). torch
  allocates outside Python's heap, so ``tracemalloc`` would miss it.
- The models have random weights (speed does not depend on what they learned) and are built in memory
  from configs of matched parameter count: BERT-style MLM, GPT-2-style CLM, BART-style seq2seq.
- The bare baselines call the Hugging Face model directly with exactly the passes the sampler's own
  generations report (e.g. T full passes for mask-predict; one prefill and one cached step per token
  for clm-infill), as a user's own loop would: ``harness time / bare time`` is the overhead the goals judge.
- A third side, the lean bare loop, does the least a sampler's work needs: the same passes with the
  output layer computed only at the positions the sampler reads (a masked LM's hidden states there
  fed to its head; a decoder prefill's last token: ``logits_to_keep``, or BART's head on it), plus an
  exact greedy choice there (softmax over the vocabulary and its max: what reporting each token's
  probability costs). The harness does the same, so ``harness / lean`` is its own cost, while
  ``harness / bare`` may fall below 1.

One concept a module: :mod:`.ratios` (medians, ratios and their bootstrap intervals), :mod:`.memory`
(peak resident memory from ``/proc``), :mod:`.timing` (interleaved timed runs, pinned threads, a
subprocess's wall time), :mod:`.models` (the random-weight models), :mod:`.bare` (the bare and lean
loops, driven by the passes the sampler's own generations report), :mod:`.samplers` (the sampler cells),
:mod:`.harness_figures` (startup and eval scaling), :mod:`.metrics` (metric throughput), :mod:`.goals`
(the goals and the ratios judged against them), :mod:`.render` (the table and Markdown views) and
:mod:`.run` (the whole bench: options and report).
"""
