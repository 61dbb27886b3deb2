{{/*
sharerelay.alertRules: the alerting rules, given (dict "alerts"
.Values.prometheusRule.alerts "pipeline" name). The one source of the rules:
templates/prometheusrule.yaml renders them for the release's pipeline, and
deploy/prometheus/sharerelay-alerts.yaml is their rendering with the default
thresholds and pipeline "" (the chart's tests keep it so).

With a pipeline, every selector of a relay or auditor metric matches
pipeline="<name>", the label both put on every series, so that the release's
alerts watch its own pipeline only; up, which has no pipeline label, is
joined to a selector that has it. With "", nothing is matched, for a
Prometheus that loads one file for every pipeline.

Prometheus's own templates in the annotations ($labels, $value) are written
inside {{` `}} so that Helm leaves them to Prometheus.
*/}}
{{- define "sharerelay.alertRules" -}}
{{- $a := .alerts -}}
{{- /* $s follows a bare metric name; $m opens the matchers of one with its own. */ -}}
{{- $s := "" -}}
{{- $m := "" -}}
{{- if .pipeline -}}
{{- $s = printf "{pipeline=%q}" .pipeline -}}
{{- $m = printf "pipeline=%q, " .pipeline -}}
{{- end -}}
groups:
  - name: sharerelay
    rules:
      - alert: SharerelayShareGroupLagRising
        expr: |
          sum by (pipeline, topic) (max by (pipeline, topic, partition) (sharerelay_share_group_lag{{ $s }})) > {{ $a.shareGroupLagRising.records | int64 }}
          and
          sum by (pipeline, topic) (max by (pipeline, topic, partition) (deriv(sharerelay_share_group_lag{{ $s }}[15m]))) > 0
        for: {{ $a.shareGroupLagRising.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-share-group-lag-rising
          summary: "{{`{{ $labels.pipeline }}: the share group's lag on {{ $labels.topic }}`}} is above {{ $a.shareGroupLagRising.records | int64 }} and has been rising for {{ $a.shareGroupLagRising.for }} ({{`{{ $value | humanize }}`}} records)"
          description: >-
            The relay takes records more slowly than they arrive, or not at
            all. Check sharerelay_worker_paused and /readyz for a paused
            worker, the lock budget and the batch duration for a slow
            transform; scale out with more instances if it is throughput.
            The threshold ({{ $a.shareGroupLagRising.records | int64 }} records) is a starting point: set it from
            the topic's normal backlog.

      - alert: SharerelayWorkerPaused
        expr: max by (pipeline, instance, worker, reason) (sharerelay_worker_paused{{ $s }}) > 0
        for: {{ $a.workerPaused.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-worker-paused
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: worker {{ $labels.worker }}`}} paused for {{ $a.workerPaused.for }}: {{`{{ $labels.reason }}`}}"
          description: >-
            The worker takes no records and holds its batch until it can
            write again (a missing or unwritable output topic, or an
            unreachable cluster). /readyz on the instance gives the error.
            It resumes by itself once the cause is fixed.

      - alert: SharerelayInstanceNotReady
        expr: max by (pipeline, instance) (sharerelay_ready{{ $s }}) == 0
        for: {{ $a.instanceNotReady.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-instance-not-ready
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}`}} has not been ready for {{ $a.instanceNotReady.for }}"
          description: >-
            The instance is still connecting to the cluster, or a worker is
            paused; GET /readyz on it says why.

      - alert: SharerelayPipelineNotReady
        expr: max by (pipeline) (sharerelay_ready{{ $s }}) == 0
        for: {{ $a.pipelineNotReady.for }}
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-pipeline-not-ready
          summary: "{{`{{ $labels.pipeline }}`}}: no instance has been ready for {{ $a.pipelineNotReady.for }}"
          description: >-
            No instance of the pipeline makes progress: the share group's
            lag grows until one does. GET /readyz on each instance says why
            (cluster unreachable, a destination topic missing or not
            writable, the source topic deleted).

      # An instance that has died exports nothing, so every rule above on
      # sharerelay_ready goes quiet with it. These two watch for the
      # silence instead. absent() cannot do it per pipeline (it needs the
      # pipeline's name written in the rule), so the pipelines and
      # instances to expect are the ones that reported in the last 24
      # hours: what Prometheus remembers replaces a list kept by hand.
      - alert: SharerelayPipelineDown
        expr: |
          group by (pipeline) (max_over_time(sharerelay_ready{{ $s }}[24h]))
          unless
          group by (pipeline) (sharerelay_ready{{ $s }})
        for: {{ $a.pipelineDown.for }}
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-pipeline-down
          summary: "{{`{{ $labels.pipeline }}`}}: no instance has reported for {{ $a.pipelineDown.for }}"
          description: >-
            Every instance that reported the pipeline's metrics in the last
            24 hours has stopped: the processes are gone, or Prometheus
            cannot scrape them (see the up series of their targets). No
            record moves and the share group's lag grows. Start an instance,
            or find why it exits in its logs (relay validate on its file
            shows a configuration error). The rule remembers a pipeline for
            24 hours after its last sample, so it also fires when a pipeline
            is retired on purpose (silence it for a day), and it stops
            firing, without the pipeline coming back, a day after the last
            instance died. A pipeline that has never reported is not known
            to it.

      # up carries no pipeline label: the join takes it from the target's
      # sharerelay_ready of the last day. topk keeps one pipeline per
      # target should one address have served two in that day (either may
      # be named), where a plain join would fail the rule.
      - alert: SharerelayInstanceDown
        expr: |
          (up == 0)
          * on (job, instance) group_left (pipeline)
          topk by (job, instance) (1, group by (job, instance, pipeline) (max_over_time(sharerelay_ready{{ $s }}[24h])))
        for: {{ $a.instanceDown.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-instance-down
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}`}}: Prometheus has not been able to scrape the instance for {{ $a.instanceDown.for }}"
          description: >-
            The target is still configured but its scrape fails: the process
            is down, crash-looping or hung, or its metrics address is not
            reachable. Any other instance of the pipeline takes over its
            records once the broker's record locks expire; with none,
            SharerelayPipelineDown fires too. Only targets that
            reported sharerelay metrics in the last 24 hours are watched
            (that is where the pipeline label comes from, whatever the
            scrape job is called); an instance removed from the scrape
            configuration, or scaled away, is not down.

      - alert: SharerelayInvariantViolation
        expr: sum by (pipeline, instance) (increase(sharerelay_invariant_violations_total{{ $s }}[1h])) > 0
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-invariant-violation
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: a safety net fired ({{ $value | humanize }} in the last hour)`}}"
          description: >-
            A check that must never fire did (e.g. a batch not fully
            acknowledged before the next poll). Keep the instance's logs and
            run relay verify on the pipeline; report it as a bug.

      - alert: SharerelayTransactionsAborting
        expr: |
          sum by (pipeline) (rate(sharerelay_transactions_total{ {{- $m }}outcome="aborted"}[10m]))
          /
          sum by (pipeline) (rate(sharerelay_transactions_total{{ $s }}[10m]))
          > {{ $a.transactionsAborting.ratio }}
        for: {{ $a.transactionsAborting.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-transactions-aborting
          summary: "{{`{{ $labels.pipeline }}: {{ $value | humanizePercentage }} of transactions abort`}}"
          description: >-
            More than {{ include "sharerelay.percent" $a.transactionsAborting.ratio }} of the transactions have aborted for {{ $a.transactionsAborting.for }}.
            sharerelay_write_failures_total by class says why: record
            (outputs the cluster refuses; their records are dead-lettered),
            destination or cluster (the workers pause and retry).

      - alert: SharerelayDeadLetterRateHigh
        expr: |
          sum by (pipeline) (rate(sharerelay_dead_letters_total{{ $s }}[10m]))
          /
          sum by (pipeline) (rate(sharerelay_records_polled_total{{ $s }}[10m]))
          > {{ $a.deadLetterRateHigh.ratio }}
        for: {{ $a.deadLetterRateHigh.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-dead-letter-rate-high
          summary: "{{`{{ $labels.pipeline }}: {{ $value | humanizePercentage }} of the records received go to the dead-letter topic`}}"
          description: >-
            More than {{ include "sharerelay.percent" $a.deadLetterRateHigh.ratio }} of the records received (every delivery counts)
            have been dead-lettered for {{ $a.deadLetterRateHigh.for }}. Read a few dead letters:
            their headers name the step and the error (a transform failing
            on a new shape of record, an output the cluster refuses,
            records failed on their last delivery). The threshold ({{ include "sharerelay.percent" $a.deadLetterRateHigh.ratio }}) is a
            starting point: a pipeline that dead-letters by design needs
            its own.

      - alert: SharerelayLockBudgetNearlySpent
        expr: histogram_quantile(0.99, sum by (pipeline, instance, le) (rate(sharerelay_lock_budget_ratio_bucket{{ $s }}[10m]))) > {{ $a.lockBudgetNearlySpent.ratio }}
        for: {{ $a.lockBudgetNearlySpent.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-lock-budget-nearly-spent
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: the slowest batches use {{ $value | humanizePercentage }} of the record lock duration`}}"
          description: >-
            Above 100% a batch's locks expire and its records are delivered
            again (no duplicate with exactly-once, but wasted work and
            redeliveries that count toward the delivery limit). Lower
            batch.max_records, speed up the transforms, or raise the share
            group's record lock duration.

      - alert: SharerelayReleasedOnLastDelivery
        expr: |
          sum by (pipeline, instance) (increase(sharerelay_released_on_last_delivery_total{{ $s }}[15m])) > 0
          or
          sum by (pipeline, instance) (sharerelay_released_on_last_delivery_total{{ $s }} unless sharerelay_released_on_last_delivery_total{{ $s }} offset 15m) > 0
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-released-on-last-delivery
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: records released on their last delivery`}}"
          description: >-
            The broker archives these records without output or dead
            letter. It should never happen; find the records in the
            instance's logs, and run relay verify on the pipeline.

      - alert: SharerelayUnsettledClaims
        expr: max by (pipeline) (sharerelay_ledger_unsettled_claims{{ $s }}) > 0
        for: {{ $a.unsettledClaims.for }}
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-unsettled-claims
          summary: "{{`{{ $labels.pipeline }}: {{ $value }} claims`}} unsettled for {{ $a.unsettledClaims.for }}"
          description: >-
            The claim ledger's resolver cannot establish whether these
            claims' transactions committed (outputs gone or still open, or
            markers that disagree). Their records stay blocked: released on
            every delivery, then archived by the broker. The WARN log "claim
            outcome not established yet" names each claim and why; settle
            one whose outcome you know with a resolution record
            (docs/exactly-once.md, "What an operator sees").

      - alert: SharerelayAmbiguousCommitUnresolved
        expr: |
          sum by (pipeline, instance) (increase(sharerelay_ambiguous_commits_total{ {{- $m }}resolution="unresolved"}[15m])) > 0
          or
          sum by (pipeline, instance) (sharerelay_ambiguous_commits_total{ {{- $m }}resolution="unresolved"} unless sharerelay_ambiguous_commits_total{ {{- $m }}resolution="unresolved"} offset 15m) > 0
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-ambiguous-commit-unresolved
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: commits with a lost answer the claim ledger could not resolve`}}"
          description: >-
            An EndTxn answer was lost and the ledger could not tell whether
            the transaction committed; the records were released and their
            claims wait for the resolver (watch SharerelayUnsettledClaims).
            Usually the cluster was unreachable at the time.

      - alert: SharerelayLostMarkerRepaired
        expr: sum by (pipeline, instance, repair) (increase(sharerelay_lost_markers_total{ {{- $m }}repair=~"restored|restored_after_abort|claims|unknown"}[10m])) > 0
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-lost-marker-repaired
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: a transaction continued a span a lost marker left open ({{ $labels.repair }})`}}"
          description: >-
            A broker lost a transaction marker and a worker's next transaction
            in that partition continued the open span. The worker ended it as
            the earlier transaction had to end and wrote again the committed
            outputs its abort discarded, before the abort (restored), or after
            it when its other producer could not (restored_after_abort: a
            crash in between would have lost them). With claims, the earlier
            transaction's claims were discarded (their records were accepted);
            with unknown, the earlier outcome was not known to this process and
            its records there were aborted. Run `relay verify` over the period
            (docs/exactly-once.md, "Promises the protocol takes from the
            broker").

      - alert: SharerelayHangingTransaction
        expr: sum by (pipeline, instance) (increase(sharerelay_hanging_transactions_total{{ $s }}[10m])) > 0
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-hanging-transaction
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: a worker holds its records behind a transaction of its own left open`}}"
          description: >-
            A broker lost a transaction marker (a node killed while writing
            them) and a transaction of the worker's producer id stays open in
            a partition it writes. The worker holds its records and waits
            rather than let its next transaction decide the old records. The
            ERROR log names the producer id and partitions; complete the
            transaction with the coordinator's decision
            (docs/exactly-once.md, "A hanging transaction of the relay's own
            producer id").

      - alert: SharerelayRetiredIdHangingTransaction
        expr: max by (pipeline, instance) (sharerelay_retired_hanging_transactions{{ $s }}) > 0
        for: {{ $a.retiredIdHangingTransaction.for }}
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-retired-id-hanging-transaction
          summary: "{{`{{ $labels.pipeline }} on {{ $labels.instance }}: a transactional id the instance no longer uses left a transaction open`}}"
          description: >-
            A broker lost a transaction marker of a transactional id this
            instance used before it ran with fewer workers or with
            batch.background_commit off. No worker writes with that id any
            more, but read_committed readers of the partition (the relay's
            consumers downstream) wait at the open transaction. The ERROR
            log names the id, partition and start offset; complete it with
            the coordinator's decision (docs/exactly-once.md, "A hanging
            transaction of the relay's own producer id").

  # The live audit (relay audit, its own scrape target): the verdicts of
  # relay verify, record by record as they settle. Its counters are
  # cumulative and continue across the auditor's restarts (they resume
  # from its checkpoint, whatever instance it runs on), and every source
  # partition's series exists from the auditor's start, at 0: increase()
  # sees a loss. The second term catches a series that is new with a
  # count already — the auditor's first judgement on a fresh start, a
  # dead letter replayed twice (a series of its own) — and not one that
  # was only absent for a restart: it is new when no sample of its
  # pipeline, topic and partition exists in the day before the window.
  - name: sharerelay-audit
    rules:
      - alert: SharerelayAuditLost
        expr: |
          max by (pipeline, topic, partition) (increase(sharerelay_audit_lost_total{{ $s }}[15m])) > 0
          or
          max by (pipeline, topic, partition) (sharerelay_audit_lost_total{{ $s }} unless on (pipeline, topic, partition) last_over_time(sharerelay_audit_lost_total{{ $s }}[1d] offset 15m)) > 0
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-audit-lost
          summary: "{{`{{ $labels.pipeline }}: the live audit judged records of {{ $labels.topic }}[{{ $labels.partition }}] lost ({{ $value | humanize }} in 15 minutes)`}}"
          description: >-
            A source record the share group acknowledged has no output and
            no dead letter, and every transaction that could have written
            them has ended. The auditor's log and relay audit --once name
            sample offsets; the relays' logs around that time say what
            happened to them (an aborted transaction, a reset of the share
            group's start offset, a record archived at its delivery limit).

      - alert: SharerelayAuditDuplicated
        expr: |
          (
            max by (pipeline, topic, partition) (increase(sharerelay_audit_duplicated_total{{ $s }}[15m]) + increase(sharerelay_audit_both_total{{ $s }}[15m])) > 0
            or
            max by (pipeline, topic, partition) (sharerelay_audit_duplicated_total{{ $s }} unless on (pipeline, topic, partition) last_over_time(sharerelay_audit_duplicated_total{{ $s }}[1d] offset 15m)) > 0
          )
          and on (pipeline)
          max by (pipeline) (sharerelay_audit_info{ {{- $m }}delivery="exactly-once"})
        labels:
          severity: critical
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-audit-duplicated
          summary: "{{`{{ $labels.pipeline }}: the live audit found records of {{ $labels.topic }}[{{ $labels.partition }}] written more than once in an exactly-once pipeline`}}"
          description: >-
            A settled source record has an output (or a dead letter) twice,
            a fan-out index twice, both an output and a dead letter, or an
            output was written after its record was judged (late). An
            at-least-once pipeline's duplicates are expected and do not
            fire this. Find the offsets with relay audit --once or relay
            verify, and the writers with the records' headers.

      - alert: SharerelayAuditLagGrowing
        expr: |
          max by (pipeline) (sharerelay_audit_lag_seconds{{ $s }}) > {{ $a.auditLagGrowing.seconds }}
          and
          max by (pipeline) (deriv(sharerelay_audit_lag_seconds{{ $s }}[10m])) > 0.5
        for: {{ $a.auditLagGrowing.for }}
        labels:
          severity: warning
        annotations:
          runbook_url: https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#alert-sharerelay-audit-lag-growing
          summary: "{{`{{ $labels.pipeline }}: the live audit has judged nothing new for {{ $value | humanizeDuration }}`}}"
          description: >-
            The auditor's judgement trails the pipeline and falls further
            behind: a transaction left open on an output holds its last
            stable offset (judgement waits for it, it never reports the
            records lost), the auditor cannot read a topic or the share
            group (its /readyz says which), or it cannot keep up.
{{- end -}}

{{/* sharerelay.percent: a ratio (0.05) written as a percentage (5%). */}}
{{- define "sharerelay.percent" -}}
{{- printf "%.4g%%" (mulf . 100) -}}
{{- end -}}
