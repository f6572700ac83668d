"""Datasets: build weighted, filtered Parquet datasets with a fixed holdout; read them back."""
