"""Files in, validated Arrow batches and byte-exact rejects out; writes nothing itself."""
