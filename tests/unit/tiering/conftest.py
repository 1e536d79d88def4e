"""The tiering tests' moto S3 fixtures (``moto_s3``, ``s3_url``, ``MotoS3``) live in
``tests/conftest.py``, shared with the tiering integration tests."""
