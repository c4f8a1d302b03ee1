"""The pure rules of SQS as cqs keeps them: values, errors and the checks and formats on them.

Owns the model values (`model`, `extension_model`), the one exception tree in queue words
(`errors`, no wire codes), request validation (`validation`), signed receipt handles
(`receipts`), queue ARNs (`arns`), the MD5s SQS returns (`checksums`), the one serialized
form of a message (`message_codec`), the dead-letter, filter and access policies
(`dead_letter_policy`, `filter_policy`, `access_policy`), AddPermission's edits
(`permissions`) and consumer group names (`group_names`).

No I/O and no asyncio. Imports the standard library and nothing else of cqs: every other
layer may import this package, and it imports none of them (checked by `.importlinter`).
"""
