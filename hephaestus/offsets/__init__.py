"""The offsets feature: get, set or reset a connector's offsets through the gate."""
