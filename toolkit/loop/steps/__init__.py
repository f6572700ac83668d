"""The loop's steps: each a small module with a typed input, a typed result and a function ``<module>_step(context,
input)`` (``build.build_step``).

The driver (``toolkit.loop.run``) saves every result as it is, and reloads
it as the same type when a resumed run skips a step that already finished.
"""
