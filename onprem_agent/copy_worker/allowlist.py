"""The deployment's allow-lists, applied to a request that already passed the contract checks.

Matching is on whole path components: an allowed `s3://b/exports/` admits `s3://b/exports/x/`
but not `s3://b/exports-secret/`, and an allowed `/data/imports` admits `/data/imports/x` but
not `/data/imports2`. A destination must lie strictly below an allowed directory, never be it:
`overwrite` into the allowed root itself would replace every import at once.
"""

from __future__ import annotations

from hdfs_events.copy_request import CopyRequest, is_within
from onprem_agent.copy_worker.failures import Rejected
from onprem_agent.copy_worker.settings import CopySettings


def check_allowed(request: CopyRequest, settings: CopySettings) -> None:
    """Raises Rejected with the reason when the request is not allowed by `settings`."""
    source = request.source
    if not any(source.bucket == allowed.bucket
               and source.prefix.startswith(allowed.prefix)
               for allowed in settings.allowed_sources):
        raise Rejected(f"source: {source.uri!r} is not inside an allowed source "
                       f"({', '.join(a.uri for a in settings.allowed_sources)})")
    if not any(is_within(request.destination, root) and request.destination != root
               for root in settings.allowed_destinations):
        raise Rejected(f"destination: {request.destination!r} is not below an allowed "
                       f"destination ({', '.join(settings.allowed_destinations)})")
    if request.notify is not None and request.notify not in notify_topics(settings):
        raise Rejected(f"notify: {request.notify!r} is not an allowed notification topic")
    if request.copy_listing is not None:
        total = sum(e.size for e in request.copy_listing)
        if total > settings.max_bytes:
            raise Rejected(f"manifest: {total} bytes in total; this worker copies at most "
                           f"{settings.max_bytes} (max_bytes)")
        if len(request.copy_listing) > settings.max_objects:
            raise Rejected(f"manifest: {len(request.copy_listing)} entries; this worker copies at "
                           f"most {settings.max_objects} (max_objects)")


def notify_topics(settings: CopySettings) -> frozenset[str]:
    topics = set(settings.allowed_notify_topics)
    if settings.notify_topic_arn:
        topics.add(settings.notify_topic_arn)
    return frozenset(topics)
