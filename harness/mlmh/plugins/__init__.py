"""Deprecated: the folder the builtin plugins once lived in. Only :mod:`mlmh.plugins.samplers_common`, the
sampler helpers' path in the docs of that release, is left, and it points to :mod:`mlmh.toolkit`."""
