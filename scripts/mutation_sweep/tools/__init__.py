"""What the sweep writes and reads: its results file."""
