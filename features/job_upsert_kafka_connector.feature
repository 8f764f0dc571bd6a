Feature: The upsert_kafka_connect job converges git's connectors into Kafka Connect
  As the reference's BDD did for bob -> fatima, but end to end on the real stack:
  generated connectors are applied, run, and replicate rows.

  Scenario: A row inserted into bob.users reads back from auth.users
    Given fresh databases for the "bob" example
    And connectors generated from its definition
    When the job "upsert_kafka_connect" runs
    Then the job exits with 0
    And every generated connector and its tasks are RUNNING
    When a user "feature-user-1" is inserted into bob.users
    Then the user "feature-user-1" reads back from auth.users

  Scenario: The validate job reports no drift after an upsert
    Given fresh databases for the "bob" example
    And connectors generated from its definition
    When the job "validate_kafka_connectors" runs
    Then the job exits with 2
    When the job "upsert_kafka_connect" runs
    And the job "validate_kafka_connectors" runs
    Then the job exits with 0
