"""Security: principals, TLS, SASL (PLAIN, SCRAM) and authorization for every listener."""
