"""The closed loop: gated generations of self-play, data and behaviour cloning, with ratings."""
