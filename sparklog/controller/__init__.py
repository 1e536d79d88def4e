"""The metadata state machine: turns requests into metadata records and replays them."""
