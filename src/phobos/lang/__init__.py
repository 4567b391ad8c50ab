"""The Python spelling of Phobos: @ph.kernel, @ph.autotune and the language's names."""
