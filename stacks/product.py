"""The whole product for one environment: four stacks grouped by concern, checked by cdk-nag."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App, DefaultStackSynthesizer, Environment, Stack, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from stacks.analytics import AnalyticsStack
from stacks.ingest import IngestStack
from stacks.monitoring import MonitoringStack
from stacks.settings import DeploySettings
from stacks.storage import StorageStack


@dataclass(frozen=True, slots=True)
class Product:
    storage: StorageStack
    ingest: IngestStack
    analytics: AnalyticsStack
    monitoring: MonitoringStack

    @property
    def stacks(self) -> tuple[Stack, ...]:
        """In deployment order."""
        return (self.storage, self.ingest, self.analytics, self.monitoring)


def stack_name(settings: DeploySettings, concern: str) -> str:
    return f"HdfsEvents-{settings.env_name}-{concern}"


def compose(app: App, settings: DeploySettings, *, nag: bool = True) -> Product:
    """Adds the product's stacks for `settings` to `app` (and the cdk-nag checks)."""
    # No account/region unless cdk.json pins them: the stacks stay environment-agnostic, so
    # synth needs no credentials and does no lookups.
    env = (Environment(account=settings.account, region=settings.region)
           if settings.account or settings.region else None)
    common = {
        "env": env,
        "synthesizer": DefaultStackSynthesizer(
            generate_bootstrap_version_rule=settings.bootstrap_version_rule),
    }
    storage = StorageStack(app, stack_name(settings, "Storage"), settings=settings,
                           description="hdfs-events: S3 event lake and DynamoDB tables", **common)
    ingest = IngestStack(app, stack_name(settings, "Ingest"), settings=settings, storage=storage,
                         description="hdfs-events: event queue, on-prem principals, consumer",
                         **common)
    analytics = AnalyticsStack(app, stack_name(settings, "Analytics"), settings=settings,
                               storage=storage,
                               description="hdfs-events: Glue catalog and jobs, Athena",
                               **common)
    monitoring = MonitoringStack(app, stack_name(settings, "Monitoring"), settings=settings,
                                 storage=storage, ingest=ingest, analytics=analytics,
                                 description="hdfs-events: alarms, dashboard, saved queries",
                                 **common)
    product = Product(storage, ingest, analytics, monitoring)
    for stack in product.stacks if settings.tag_resources else ():
        Tags.of(stack).add("project", "hdfs-events")
        Tags.of(stack).add("environment", settings.env_name)
    if nag:
        # Each construct acknowledged its own findings (stacks/nag.py) as it was built.
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return product
