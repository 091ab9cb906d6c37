"""Transports and runtimes: the GenManip HTTP client and compatible simulator, the built-in
PyBullet simulator, the in-process runtime, the ZeroMQ client / server / broker.

:mod:`runtime_bridge.host` is the executor host every runtime shares; its seams are
:class:`~harness_bt.runtime.backend.Backend` (a robot or simulator) and
:data:`~harness_bt.runtime.executor.ExecutorFactory` (the skills' executors).
"""
