"""Wire tests generated from botocore's SQS service model: required members, enums and the
documented errors of all 23 operations, over JSON and the query protocol.

Must not import cqs: the server is seen only through HTTP.
"""
