import Monotonic

// Monotonic time (`MonotonicInstant`) as the I/O edge reads it; the proxy never reads a
// clock, so tests drive it with a fake one.
