"""Tests of ferrymq.ha: the database lease locker, write fencing, split brain in processes."""
