"""Errors of the Halide front-end (all are MascarponeErrors)."""
from mascarpone.middleend.errors import MascarponeError, NotSupportedError


class HalideFormatError(MascarponeError, ValueError):
    """The bytes are not a readable serialized Halide pipeline (truncated, corrupted, or not one)."""


class HalideVersionError(HalideFormatError):
    """The pipeline was serialized by a Halide whose format this front-end does not read."""


__all__ = ["HalideFormatError", "HalideVersionError", "NotSupportedError"]
