package audit

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Metric names (docs/contract.md, "Auditor").
const (
	metricFindings     = "workloaddoctor_findings"
	metricFindingAge   = "workloaddoctor_finding_age_seconds"
	metricScanDuration = "workloaddoctor_scan_duration_seconds"
	metricScans        = "workloaddoctor_scans_total"
	metricLastSuccess  = "workloaddoctor_last_success_timestamp_seconds"
	metricCoverage     = "workloaddoctor_coverage_complete"
	metricLeader       = "workloaddoctor_leader"
	metricFixes        = "workloaddoctor_fixes_total"
	resultSuccess      = "success"
	resultError        = "error"
	labelCheck         = "check"
	labelRootCause     = "root_cause"
	labelSeverity      = "severity"
	labelNamespace     = "namespace"
	labelKind          = "kind"
	findingsHelp       = "Current findings of the last complete scan."
	findingAgeHelp     = "How long each current finding's object has been stuck, as of the last complete scan."
	scanDurationHelp   = "Duration of each scan cycle, failed ones included."
	scansHelp          = "Scan cycles by result: success, or error (the scan failed or could not read an input checks detect from)."
	lastSuccessHelp    = "Unix time of the last successful scan."
	coverageHelp       = "1 when the last scan read everything its checks need, else 0."
	leaderHelp         = "1 on the replica that writes reports and fixes."
	fixesHelp          = "Fix actions the auditor ran on its own, by action and result status (applied, refused, failed, ...)."
)

var (
	findingsLabels = []string{labelCheck, labelRootCause, labelSeverity, labelNamespace, labelKind}
	ageLabels      = []string{labelCheck, labelRootCause, labelSeverity, labelNamespace, labelKind, "name", "pod", "owner_kind", "owner_name"}
)

// Metrics are the auditor's Prometheus metrics, on a registry of their own: nothing global, so
// two auditors in one process (the tests) do not share series.
type Metrics struct {
	Registry     *prometheus.Registry
	findings     *findingsCollector
	scanDuration prometheus.Histogram
	scans        *prometheus.CounterVec
	lastSuccess  prometheus.Gauge
	coverage     prometheus.Gauge
	leader       prometheus.Gauge
	fixes        *prometheus.CounterVec
}

// NewMetrics registers the auditor's metrics, the Go runtime's and the process's.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		findings: &findingsCollector{
			count: prometheus.NewDesc(metricFindings, findingsHelp, findingsLabels, nil),
			age:   prometheus.NewDesc(metricFindingAge, findingAgeHelp, ageLabels, nil),
		},
		scanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricScanDuration, Help: scanDurationHelp,
			// A scan takes a second on a small cluster and tens of seconds at 100k pods.
			Buckets: []float64{0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320},
		}),
		scans:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricScans, Help: scansHelp}, []string{"result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLastSuccess, Help: lastSuccessHelp}),
		coverage:    prometheus.NewGauge(prometheus.GaugeOpts{Name: metricCoverage, Help: coverageHelp}),
		leader:      prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLeader, Help: leaderHelp}),
		fixes:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricFixes, Help: fixesHelp}, []string{"action", "result"}),
	}
	// Both results exist from the start, so that rate() and increase() see the first error.
	m.scans.WithLabelValues(resultSuccess)
	m.scans.WithLabelValues(resultError)
	m.Registry.MustRegister(m.findings, m.scanDuration, m.scans, m.lastSuccess, m.coverage, m.leader, m.fixes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetLeader says whether this replica writes.
func (m *Metrics) SetLeader(leader bool) { m.leader.Set(boolValue(leader)) }

// CountFix counts one fix action the auditor applied, by its result status.
func (m *Metrics) CountFix(action, result string) { m.fixes.WithLabelValues(action, result).Inc() }

// observe records one cycle. A failed cycle (r nil or blind) leaves the findings of the last good
// one in place: a scan that did not look must not make findings disappear.
func (m *Metrics) observe(c Cycle) {
	// The counters move last: a scrape that sees a cycle counted sees its outputs too.
	m.scanDuration.Observe(c.Duration.Seconds())
	if c.Failed() {
		m.coverage.Set(0)
		m.scans.WithLabelValues(resultError).Inc()
		return
	}
	m.findings.set(c.Report)
	m.coverage.Set(boolValue(c.Report.Coverage.Complete))
	if c.PublishErr != nil {
		// The scan looked, but its reports are not all written: the cycle did not do its work,
		// and an alert on the last success or on errors must see it.
		m.scans.WithLabelValues(resultError).Inc()
		return
	}
	m.lastSuccess.Set(float64(c.Finished.Unix()))
	m.scans.WithLabelValues(resultSuccess).Inc()
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// findingsCollector renders the findings of one report at scrape time, so that a scrape never
// sees half of one cycle and half of the next.
type findingsCollector struct {
	count, age *prometheus.Desc
	mu         sync.Mutex
	series     []prometheus.Metric
	// published are the findings the series show, carried ones included.
	published []report.Finding
}

func (c *findingsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.age
}

func (c *findingsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	series := c.series
	c.mu.Unlock()
	for _, s := range series {
		ch <- s
	}
}

// set publishes the report's findings. A check that may have missed findings this cycle
// (skipped, or without an input it detects from) keeps its findings of earlier cycles that were
// not found again, as the reports keep their results (planReports): an alert on a finding must
// not resolve because the auditor lost a permission, and fire again when it is back. Their age
// goes on growing; the coverage gauge says the cycle was incomplete.
func (c *findingsCollector) set(r *report.Report) {
	hidden := hiddenChecks(gapsOf(r.Coverage))
	shown := *r
	if len(hidden) > 0 {
		found := map[string]bool{}
		for _, f := range r.Findings {
			found[f.Check+"\x00"+f.Object.String()] = true
		}
		c.mu.Lock()
		for _, f := range c.published {
			if hidden[f.Check] && !found[f.Check+"\x00"+f.Object.String()] {
				shown.Findings = append(slices.Clip(shown.Findings), f)
			}
		}
		c.mu.Unlock()
	}
	series := findingSeries(c.count, c.age, &shown)
	c.mu.Lock()
	c.series, c.published = series, shown.Findings
	c.mu.Unlock()
}

// findingSeries turns a report into the findings and finding-age series: one count per label set,
// one age per finding, measured at the report's time.
func findingSeries(count, age *prometheus.Desc, r *report.Report) []prometheus.Metric {
	type key struct{ check, cause, sev, ns, kind string }
	counts := map[key]int{}
	var order []key
	var out []prometheus.Metric
	// Same-named kinds of two API groups would give one series twice, which fails the scrape.
	seen := map[[9]string]bool{}
	for _, f := range r.Findings {
		k := key{f.Check, f.RootCause.ID, string(f.Severity), f.Object.Namespace, f.Object.Kind}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
		pod, ownerKind, ownerName := "", "", ""
		if f.Object.Kind == "Pod" {
			pod = f.Object.Name
		}
		if f.Owner != nil {
			ownerKind, ownerName = f.Owner.Kind, f.Owner.Name
		}
		labels := [9]string{k.check, k.cause, k.sev, k.ns, k.kind, f.Object.Name, pod, ownerKind, ownerName}
		if seen[labels] {
			continue
		}
		seen[labels] = true
		stuck := r.Metadata.GeneratedAt.Sub(f.Since).Seconds()
		if f.Since.IsZero() || stuck < 0 {
			stuck = 0
		}
		out = append(out, prometheus.MustNewConstMetric(age, prometheus.GaugeValue, stuck, labels[:]...))
	}
	for _, k := range order {
		out = append(out, prometheus.MustNewConstMetric(count, prometheus.GaugeValue, float64(counts[k]),
			k.check, k.cause, k.sev, k.ns, k.kind))
	}
	return out
}
