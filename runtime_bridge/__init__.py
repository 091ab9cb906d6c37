"""Transports and runtimes: the GenManip HTTP client and compatible simulator, the built-in
PyBullet simulator, the in-process runtime, the ZeroMQ client / server / broker."""
