"""Code generators that turn the middle-end's loop IR into runnable code."""
