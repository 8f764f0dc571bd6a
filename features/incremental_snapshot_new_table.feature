Feature: A table newly added to a source is back-filled by an incremental snapshot
  The reference's incremental_snapshot_new_table: existing rows of a table that starts being
  captured reach the sinks after one reconcile, without recreating the source connector.

  Scenario: Rows already in a newly captured table appear in the sink after one reconcile
    Given bob's source captures only users, and bob.students already holds 50 rows
    When students -> fatima is added to the definition and connectors are regenerated
    And the upsert job runs with --sendIncrementalSnapshot
    Then the source connector was updated, not recreated
    And 50 students read back from fatima.students
    And the snapshot status of the signal is COMPLETED with SUCCEEDED tables
    And no new events were emitted for bob.users
