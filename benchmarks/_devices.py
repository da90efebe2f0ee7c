"""Imported first by benchmarks that run sigmabnn's samplers: one JAX CPU device per core.

:func:`sigmabnn.parallel.set_host_device_count` only takes effect before JAX starts its backend,
and importing the peers (NumPyro, BlackJAX) already starts it, so this module is imported before
anything else. sigmabnn then splits its chains over the devices; the peers run on the default
device as their users' code would.
"""

from sigmabnn.parallel import set_host_device_count

DEVICES = set_host_device_count()
