Feature: What recreating a source connector does to changes made while it was gone
  Pinned down on real Debezium 3.6 (PostgreSQL, pgoutput) and Kafka Connect: Connect keeps a
  connector's offsets across DELETE, and the replication slot outlives the connector
  (slot.drop.on.stop=false). hephaestus never deletes a source, and back-fills by signal.

  Background:
    Given a running source capturing bob.users into auth.users

  Scenario: Recreated under the same name and slot, the source replays what it missed
    When the source connector is deleted by hand
    And a user "during-1" is inserted while the source is deleted
    Then Connect still holds the source's offsets
    When the source connector is recreated with the same name and config
    Then the user "during-1" reads back from auth.users

  Scenario: Recreated after its slot was dropped, the source refuses to skip the gap
    When the source connector is deleted by hand
    And its replication slot is dropped
    And a user "lost-1" is inserted while the source is deleted
    When the source connector is recreated with the same name and config
    Then the source task fails because its offset is no longer available on the server
    And the user "lost-1" is not in auth.users

  Scenario: hephaestus's path: the source is never deleted, nothing is lost
    When the source's file is removed from git and the upsert job runs
    Then the source is reported protected and is still RUNNING
    When a user "kept-1" is inserted into bob.users
    Then the user "kept-1" reads back from auth.users
