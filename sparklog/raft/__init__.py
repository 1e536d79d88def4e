"""KRaft consensus, sans-IO. In this release the quorum has one voter and commits on local append."""
