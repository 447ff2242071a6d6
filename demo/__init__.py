"""`make demo`: the whole chain on one machine (`python -m demo`), and the local cloud it runs on
(moto server, the CDK app's `local` templates deployed into it, the consumer Lambda as a
process of its own)."""
