"""opsloop's operations tools, the host abstraction and the simulated host."""
