"""The scheduled Glue workflow: both compactions, then the attribution, then the rollups."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_glue as glue

from stacks.lake_jobs import LakeJobs

# The job states a conditional trigger can watch besides SUCCEEDED (AWS::Glue::Trigger
# Condition: "Currently, the values supported are SUCCEEDED, STOPPED, TIMEOUT, and FAILED").
FAILED_STATES = (glue.JobState.FAILED, glue.JobState.TIMEOUT, glue.JobState.STOPPED)


class LakeWorkflow:
    """Not a Construct: the workflow keeps the stack as its scope, so its CloudFormation
    logical ID and its triggers' stay those already deployed (a new ID would recreate the
    workflow and lose its run history)."""

    def __init__(self, stack: Stack, *, prefix: str, schedule: str, jobs: LakeJobs) -> None:
        self._jobs = jobs
        self.workflow = glue.Workflow(stack, "Workflow", workflow_name=f"{prefix}-lake",
                                      description="Compactions, attribution, then rollups",
                                      max_concurrent_runs=1)
        self.workflow.add_scheduled_trigger(
            "Schedule", schedule=glue.TriggerSchedule.expression(schedule),
            start_on_creation=True,
            actions=[glue.Action.job(jobs.compact_job), glue.Action.job(jobs.compact_audit_job)])
        # Both compactions, each on its own days: a run recomputes the days whose events or
        # audit partitions moved since its last one (glue_jobs/attribution_days.py).
        self.workflow.add_conditional_trigger(
            "AfterBothCompactions", start_on_creation=True,
            predicate=glue.Predicate(logical=glue.PredicateLogical.AND, conditions=[
                glue.Condition.job(jobs.compact_job, glue.JobState.SUCCEEDED),
                glue.Condition.job(jobs.compact_audit_job, glue.JobState.SUCCEEDED)]),
            actions=[glue.Action.job(jobs.attribute_job)])
        self._start_rollups_after_attribution()

    def _start_rollups_after_attribution(self) -> None:
        """The rollups after the attribution (a mass delete names the users the attribution
        found), whatever its end: a failed attribution or audit compaction must not stop the
        activity numbers, whose marks the events compaction wrote. The attribution runs only
        when both compactions succeeded, so exactly one of these triggers fires in a workflow
        run whose events compaction succeeded: after the attribution's end (ANY of its final
        states), or, when the audit compaction ended otherwise (and the attribution never
        started), after the two compactions' ends (Glue's AND takes one state per condition:
        a trigger per failed state). The days the attribution rewrote are marked for the next
        rollups run (glue_jobs/rollup_days.py), so a rollups run started without it still
        redoes them later."""
        ended = (glue.JobState.SUCCEEDED, *FAILED_STATES)
        self.workflow.add_conditional_trigger(
            "AfterAttribution", start_on_creation=True,
            predicate=glue.Predicate(logical=glue.PredicateLogical.ANY, conditions=[
                glue.Condition.job(self._jobs.attribute_job, state) for state in ended]),
            actions=[glue.Action.job(self._jobs.rollups_job)])
        for state in FAILED_STATES:
            self.workflow.add_conditional_trigger(
                f"WithoutAudit{state.value.title()}", start_on_creation=True,
                predicate=glue.Predicate(logical=glue.PredicateLogical.AND, conditions=[
                    glue.Condition.job(self._jobs.compact_job, glue.JobState.SUCCEEDED),
                    glue.Condition.job(self._jobs.compact_audit_job, state)]),
                actions=[glue.Action.job(self._jobs.rollups_job)])
