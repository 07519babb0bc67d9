"""Authentication (TLS contexts, SASL mechanisms, stored credentials) and authorization (ACLs and Kafka's operation
table), between the wire server and the broker: `server` calls it once per connection and once per request."""
