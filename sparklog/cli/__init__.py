"""The `sparklog` command."""
