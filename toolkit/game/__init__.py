"""The Distill game: a small, honest 4-player Commander (see ``rules``)."""
