"""Export: a built dataset written in the formats other tools load (Minari for offline RL)."""
