"""Source schema drift (issue 45): a DBA's DDL judged by what it does to the data."""
