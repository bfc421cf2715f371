package audit

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

const (
	resultSuccess = "success"
	resultError   = "error"
)

// families are the auditor's metrics (docs/contract.md, "Auditor"), each declared whole: what a
// scrape shows of it and how its samples come from the auditor's state. Registration and every
// scrape go through this table, so a family is stated here and nowhere else.
func families() []family {
	return []family{
		{name: "workloaddoctor_findings", help: "Current findings of the last complete scan.",
			typ: gauge, labels: []string{"check", "root_cause", "severity", "namespace", "kind"}, samples: findingCounts},
		// pod, deployment, statefulset and daemonset are named as kube-state-metrics names them, so
		// that alerts on its series (kubernetes-mixin's KubePodNotReady, KubeDeploymentRolloutStuck,
		// KubeStatefulSetUpdateNotRolledOut, KubeDaemonSetRolloutStuck) join a finding and are
		// inhibited by it on the same label names.
		{name: "workloaddoctor_finding_age_seconds", help: "How long each current finding's object has been stuck, as of the last complete scan.",
			typ: gauge, labels: []string{"check", "root_cause", "severity", "namespace", "kind", "name", "pod", "owner_kind", "owner_name",
				"deployment", "statefulset", "daemonset"}, samples: findingAges},
		{name: "workloaddoctor_suppressed_findings", help: "Findings of the last complete scan that exemptions (annotations or the --exemptions file) hold back; they are not in workloaddoctor_findings.",
			typ: gauge, labels: []string{"check", "root_cause", "namespace"}, samples: suppressedCounts},
		{name: "workloaddoctor_scan_duration_seconds", help: "Duration of each scan cycle, failed ones included.",
			typ: histogram, samples: func(s *state) []sample { return []sample{{dist: &s.duration, created: s.duration.since}} }},
		{name: "workloaddoctor_scans_total", help: "Scan cycles by result: success, or error (the scan failed or could not read an input checks detect from).",
			typ: counter, labels: []string{"result"}, samples: func(s *state) []sample { return s.scans.samples() }},
		{name: "workloaddoctor_last_success_timestamp_seconds", help: "Unix time of the last successful scan.",
			typ: gauge, samples: func(s *state) []sample { return one(s.lastSuccess) }},
		{name: "workloaddoctor_coverage_complete", help: "1 when the last scan read everything its checks need, else 0.",
			typ: gauge, samples: func(s *state) []sample { return one(s.coverage) }},
		{name: "workloaddoctor_leader", help: "1 on the replica that writes reports and fixes.",
			typ: gauge, samples: func(s *state) []sample { return one(s.leader) }},
		{name: "workloaddoctor_fixes_total", help: "Fix actions the auditor ran on its own, by action and result status (applied, refused, failed, ...).",
			typ: counter, labels: []string{"action", "result"}, samples: func(s *state) []sample { return s.fixes.samples() }},
	}
}

// family is one metric family: its name, help, type and label names, and samples, which reads
// its series off the auditor's state at scrape time.
type family struct {
	name, help string
	typ        metricType
	labels     []string
	samples    func(*state) []sample
}

// metricType is how a scraper reads a family's samples.
type metricType int

const (
	gauge metricType = iota
	counter
	histogram
)

// sample is one series of a family: its label values, in the order of the family's label
// names, and its value, or its distribution for a histogram. created is when a counter or a
// histogram started counting, which the protobuf format carries so that a scraper tells a
// restart from a counter that did not move.
type sample struct {
	labels  []string
	value   float64
	dist    *distribution
	created time.Time
}

func one(v float64) []sample { return []sample{{value: v}} }

// metric renders one sample of f, described by d. A sample that does not fit its family fails
// the scrape with the reason rather than the process.
func (f family) metric(d *prometheus.Desc, s sample) prometheus.Metric {
	var m prometheus.Metric
	var err error
	switch f.typ {
	case histogram:
		m, err = prometheus.NewConstHistogramWithCreatedTimestamp(d, s.dist.count, s.dist.sum, maps.Clone(s.dist.buckets), s.created, s.labels...)
	case counter:
		m, err = prometheus.NewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, s.value, s.created, s.labels...)
	default:
		m, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, s.value, s.labels...)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// Metrics are the auditor's Prometheus metrics, on a registry of their own: nothing global, so
// two auditors in one process (the tests) do not share series.
type Metrics struct {
	Registry *prometheus.Registry
	// mu guards state: a scrape reads it whole, so it never sees half of one cycle and half of
	// the next, nor a cycle counted without its outputs.
	mu    sync.Mutex
	state state
}

// state is what the metrics show, the families' only source.
type state struct {
	duration                      distribution
	scans                         counterVec
	lastSuccess, coverage, leader float64
	fixes                         counterVec
	// findings are those the series show, carried ones included, and findingsAt the time of the
	// report they were published with, which their age is measured at.
	findings   []report.Finding
	findingsAt time.Time
	// suppressed are the last complete scan's suppressed findings.
	suppressed []report.Suppressed
}

// NewMetrics registers the auditor's metrics, the Go runtime's and the process's.
func NewMetrics() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), state: state{
		// A scan takes a second on a small cluster and tens of seconds at 100k pods.
		duration: newDistribution(0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320),
		scans:    counterVec{},
		fixes:    counterVec{},
	}}
	// Both results exist from the start, so that rate() and increase() see the first error.
	m.state.scans.series(resultSuccess)
	m.state.scans.series(resultError)
	m.Registry.MustRegister(newFamiliesCollector(m, families()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetLeader says whether this replica writes.
func (m *Metrics) SetLeader(leader bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.leader = boolValue(leader)
}

// CountFix counts one fix action the auditor applied, by its result status.
func (m *Metrics) CountFix(action, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.fixes.series(action, result).value++
}

// observe records one cycle. A failed cycle (r nil or blind) leaves the findings of the last good
// one in place: a scan that did not look must not make findings disappear.
func (m *Metrics) observe(c Cycle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &m.state
	s.duration.observe(c.Duration.Seconds())
	if c.Failed() {
		s.coverage = 0
		s.scans.series(resultError).value++
		return
	}
	s.publish(c.Report)
	s.coverage = boolValue(c.Report.Coverage.Complete)
	if c.PublishErr != nil {
		// The scan looked, but its reports are not all written: the cycle did not do its work,
		// and an alert on the last success or on errors must see it.
		s.scans.series(resultError).value++
		return
	}
	s.lastSuccess = float64(c.Finished.Unix())
	s.scans.series(resultSuccess).value++
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// familiesCollector renders a table of families from the metrics' state at scrape time.
type familiesCollector struct {
	m        *Metrics
	families []family
	descs    []*prometheus.Desc
}

func newFamiliesCollector(m *Metrics, fs []family) *familiesCollector {
	c := &familiesCollector{m: m, families: fs}
	for _, f := range fs {
		c.descs = append(c.descs, prometheus.NewDesc(f.name, f.help, f.labels, nil))
	}
	return c
}

func (c *familiesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *familiesCollector) Collect(ch chan<- prometheus.Metric) {
	var out []prometheus.Metric
	c.m.mu.Lock()
	for i, f := range c.families {
		for _, s := range f.samples(&c.m.state) {
			out = append(out, f.metric(c.descs[i], s))
		}
	}
	c.m.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

// counterVec counts by label values, as a counter family's series.
type counterVec map[string]*tally

type tally struct {
	labels []string
	value  float64
	since  time.Time
}

// series returns the series of these label values, started now if it is new.
func (v counterVec) series(labels ...string) *tally {
	k := strings.Join(labels, "\x00")
	if v[k] == nil {
		v[k] = &tally{labels: labels, since: time.Now()}
	}
	return v[k]
}

func (v counterVec) samples() []sample {
	out := make([]sample, 0, len(v))
	for _, t := range v {
		out = append(out, sample{labels: t.labels, value: t.value, created: t.since})
	}
	return out
}

// distribution is a histogram's observations: the count at or under each bucket's upper bound.
type distribution struct {
	buckets map[float64]uint64
	count   uint64
	sum     float64
	since   time.Time
}

func newDistribution(bounds ...float64) distribution {
	d := distribution{buckets: map[float64]uint64{}, since: time.Now()}
	for _, b := range bounds {
		d.buckets[b] = 0
	}
	return d
}

func (d *distribution) observe(v float64) {
	d.count++
	d.sum += v
	for b := range d.buckets {
		if v <= b {
			d.buckets[b]++
		}
	}
}

// publish sets the report's findings. A check that may have missed findings this cycle
// (skipped, or without an input it detects from) keeps its findings of earlier cycles that were
// not found again, as the reports keep their results (planReports): an alert on a finding must
// not resolve because the auditor lost a permission, and fire again when it is back. Their age
// goes on growing; the coverage gauge says the cycle was incomplete.
func (s *state) publish(r *report.Report) {
	hidden := hiddenChecks(gapsOf(r.Coverage))
	shown := r.Findings
	if len(hidden) > 0 {
		found := map[string]bool{}
		for _, f := range r.Findings {
			found[f.Check+"\x00"+f.Object.String()] = true
		}
		for _, f := range s.findings {
			if hidden[f.Check] && !found[f.Check+"\x00"+f.Object.String()] {
				shown = append(slices.Clip(shown), f)
			}
		}
	}
	s.findings, s.findingsAt = shown, r.Metadata.GeneratedAt
	s.suppressed = r.Suppressed
}

// suppressedCounts are the suppressed-findings series: one count per label set, in the order
// the report lists them.
func suppressedCounts(s *state) []sample {
	keys := make([][]string, 0, len(s.suppressed))
	for _, f := range s.suppressed {
		keys = append(keys, []string{f.Check, f.RootCause.ID, f.Object.Namespace})
	}
	return countSeries(keys)
}

// countSeries counts label sets, one sample each, in the order they first appear.
func countSeries(keys [][]string) []sample {
	counts := map[string]*sample{}
	var out []*sample
	for _, k := range keys {
		id := strings.Join(k, "\x00")
		if counts[id] == nil {
			counts[id] = &sample{labels: k}
			out = append(out, counts[id])
		}
		counts[id].value++
	}
	samples := make([]sample, 0, len(out))
	for _, s := range out {
		samples = append(samples, *s)
	}
	return samples
}

// findingKey is the labels of a finding's count series.
func findingKey(f report.Finding) [5]string {
	return [5]string{f.Check, f.RootCause.ID, string(f.Severity), f.Object.Namespace, f.Object.Kind}
}

// findingCounts are the findings series: one count per label set.
func findingCounts(s *state) []sample {
	keys := make([][]string, 0, len(s.findings))
	for _, f := range s.findings {
		k := findingKey(f)
		keys = append(keys, k[:])
	}
	return countSeries(keys)
}

// workloadLabel is the age label that names a finding's object when it is one of the apps/v1
// workloads kube-state-metrics labels by kind, "" otherwise. Only the object itself counts,
// never a pod's owner, so that an inhibition built on it silences a workload's alert only while a
// finding explains that workload. An OpenKruise StatefulSet or DaemonSet (apps.kruise.io) has no
// such series.
func workloadLabel(o report.ObjectRef) string {
	if group, _, _ := strings.Cut(o.APIVersion, "/"); group != "apps" {
		return ""
	}
	switch o.Kind {
	case "Deployment":
		return "deployment"
	case "StatefulSet":
		return "statefulset"
	case "DaemonSet":
		return "daemonset"
	}
	return ""
}

// findingAges are the finding-age series: one per finding, measured at its report's time.
func findingAges(s *state) []sample {
	var out []sample
	// Same-named kinds of two API groups may give one series twice, which fails the scrape.
	seen := map[string]bool{}
	for _, f := range s.findings {
		k := findingKey(f)
		pod, ownerKind, ownerName := "", "", ""
		if f.Object.Kind == "Pod" {
			pod = f.Object.Name
		}
		if f.Owner != nil {
			ownerKind, ownerName = f.Owner.Kind, f.Owner.Name
		}
		workload := map[string]string{workloadLabel(f.Object): f.Object.Name}
		labels := append(k[:], f.Object.Name, pod, ownerKind, ownerName, workload["deployment"], workload["statefulset"], workload["daemonset"])
		key := strings.Join(labels, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		stuck := s.findingsAt.Sub(f.Since).Seconds()
		if f.Since.IsZero() || stuck < 0 {
			stuck = 0
		}
		out = append(out, sample{labels: labels, value: stuck})
	}
	return out
}
