"""Training commands: behaviour cloning, PPO (flat and recurrent), evaluation, the decision exporter."""
