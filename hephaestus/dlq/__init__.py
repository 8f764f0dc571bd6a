"""Dead-letter queues of the sinks: count, show, replay and purge what they parked."""
